"""Recipes: a whole experiment as named steps in a TOML file, run with `xling run RECIPE`.

    [recipe]
    name = "madx-qu"
    model = "e5-small"
    seeds = [1, 2, 3]           # optional: every training step once per seed

    [[step]]
    name = "lang-qu"
    run = "train-lang"          # any of RUNS in kinds.py: train-lang, train-task, evaluate, tag, project, ...
    lang = "qu"
    corpus = ["corpus:quechua-text"]
    steps = 300

Step keys are the command-line options in snake_case. Before anything runs, the recipe
is validated: unknown keys, missing inputs, and steps whose inputs no earlier step
produces (and the workspace does not hold) are reported together. Steps whose outputs
already exist are skipped, so a rerun after an interruption resumes; a step runs again
when its options were edited (the options each step ran with are kept in `steps.json`
beside the results) or an adapter it uses was saved after its output. Every evaluation
ends up in a results table, written as markdown and JSON.

With `seeds`, the whole recipe runs once per seed, each in its own workspace
`<workspace>/seed-<N>/`, with that seed for every training step; the results table gives
each evaluation per seed, with mean and standard deviation.

The rooms, in the order a recipe goes through them: `reading` (the TOML file into a `Recipe`),
`kinds` (what each `run = ...` is: its options, what it needs and saves, how it runs),
`planning` (validation, and which steps must run and why), `running` (running them, seed by
seed) and `results` (the results table). `options` holds `xling run`'s own options; it
imports nothing heavy, so that the command line starts fast.
"""
