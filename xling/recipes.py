"""Recipes: a whole experiment as named steps in a TOML file, run with `xling run RECIPE`.

    [recipe]
    name = "madx-qu"
    model = "e5-small"
    seeds = [1, 2, 3]           # optional: every training step once per seed

    [[step]]
    name = "lang-qu"
    run = "train-lang"          # train-lang, train-task, train-fusion, self-train, evaluate, tag, analyze
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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Console
from rich.table import Table

from xling.analysis.options import AnalyzeOptions
from xling.data.catalog import PREFIX, load_catalog, tomllib
from xling.data.fetch import FetchError, resolve
from xling.data.hub_datasets import hub_dataset_id
from xling.errors import XlingError
from xling.fileio import read_json, write_json_atomic, write_text_atomic
from xling.hub import CARD_FILE, REPORT_FILE, model_card, read_report
from xling.models.loading import DEFAULT_MODEL
from xling.options import build, check_type, defaults, options_of
from xling.scoring.bootstrap import interval, paired, spread
from xling.scoring.cells import difference_cell, interval_cell, sentences_cell
from xling.tagging.evaluate import EvaluationOptions, evaluate, leakage_warning
from xling.tagging.options import TagOptions
from xling.train.config import FusionOptions, LanguageAdapterOptions, SelfTrainingOptions, TaskAdapterOptions
from xling.train.fusion import train_fusion
from xling.train.language import train_language_adapter
from xling.train.loop import TrainingProgress
from xling.train.self_training import self_train
from xling.train.summary import language_report_table, selection_summary, self_training_summary
from xling.train.task import train_task_adapter
from xling.workspace import Workspace, file_name, inside, is_hub_name, is_path

RUN_LEVEL = {"model", "workspace", "overwrite", "restart"}  # set by the recipe and `xling run`, not by steps
COMMON_KEYS = {"title", "run"}  # a step's own keys; every other key is the command's option
STEPS_FILE = "steps.json"
PATH_KEYS = {"corpus", "train", "dev", "data", "input"}


@dataclass
class Step:
    number: int
    title: str
    run: str
    options: dict

    def where(self, file: str) -> str:
        return f"{file}: step {self.number} ({self.title})"


HEAD_KEYS = {"name": str, "model": str, "workspace": str, "description": str, "seeds": list[int]}


@dataclass
class Recipe:
    file: str
    name: str
    model: str = DEFAULT_MODEL
    workspace: str | None = None
    description: str = ""
    seeds: list[int] = field(default_factory=list)  # empty: one run, seeds as the steps say
    steps: list[Step] = field(default_factory=list)


def read_recipe(path: str | Path) -> Recipe:
    path = Path(path)
    if not path.is_file():
        raise XlingError(f"no recipe at {path}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise XlingError(f"{path}: not valid TOML: {err}") from err
    head, raw_steps = data.get("recipe", {}), data.get("step", [])
    if not isinstance(head, dict):
        raise XlingError(f"{path}: `recipe` must be a table ([recipe] with name, model, ...), not {head!r}")
    if not isinstance(raw_steps, list) or not all(isinstance(s, dict) for s in raw_steps):
        raise XlingError(f"{path}: `step` must be a list of tables, each starting with [[step]]")
    unknown = set(data) - {"recipe", "step"} | set(head) - set(HEAD_KEYS)
    if unknown:
        raise XlingError(f"{path}: unknown keys {', '.join(sorted(unknown))}")
    try:
        fields = {key: check_type(key, head[key], hint) for key, hint in HEAD_KEYS.items() if key in head}
        steps = [
            Step(
                i,
                file_name(check_type("title", s.get("title", f"step-{i}"), str), "step title"),
                check_type("run", s.get("run", ""), str),
                {k: v for k, v in s.items() if k not in COMMON_KEYS},
            )
            for i, s in enumerate(raw_steps, start=1)
        ]
        name = file_name(fields.get("name", path.stem), "recipe name")
    except XlingError as err:
        raise XlingError(f"{path}: {err}") from None
    titles = [step.title for step in steps]
    if twice := sorted({title for title in titles if titles.count(title) > 1}):
        raise XlingError(f"{path}: step titles must differ (each names a result file): {', '.join(twice)}")
    if reserved := sorted(set(titles) & {Path(STEPS_FILE).stem, "results"}):
        raise XlingError(f"{path}: step title {reserved[0]!r} is the name of the recipe's own result file")
    return Recipe(str(path), name, **{k: v for k, v in fields.items() if k != "name"}, steps=steps)


def trains(step: Step) -> bool:
    return step.run in RUNS and RUNS[step.run].saves is not None


def seeded(recipe: Recipe, seed: int) -> Recipe:
    """The recipe's run for one seed: its own workspace, and the seed in every training step."""
    clashing = [s.where(recipe.file) for s in recipe.steps if "seed" in s.options]
    if clashing:
        raise XlingError(
            f"{'; '.join(clashing)}: key 'seed' conflicts with the recipe's seeds, which set it for every training step"
        )
    root = Workspace(recipe.workspace, recipe.model).root / f"seed-{seed}"
    steps = [replace(s, options={**s.options, "seed": seed}) if trains(s) else s for s in recipe.steps]
    return replace(recipe, workspace=str(root), seeds=[seed], steps=steps)


# ---- what each step needs and makes ----------------------------------------------------------------


def step_options(step: Step, **run_level):
    """A step's options dataclass, built as the command line builds it."""
    return build(OPTIONS[step.run], {**step.options, **run_level})


def _trained_name(options) -> str:
    return options.name or options.default_name()


def _tagging_needs(options, step: Step, recipe: Recipe, workspace: Workspace) -> list[tuple[str, str]]:
    """What tagging with the options of evaluate, tag or analyze needs: a fusion, or the task adapter that
    `xling tag` would find (the steps before count as trained; `ner-en` when none is, which validation reports),
    and the language adapter under it."""
    if getattr(options, "analysis", None) == "params":
        return []
    if options.fusion:
        needs = [("fusion", options.fusion)]
    else:
        try:
            adapter = workspace.task_adapter_name(
                "ner", options.lang, options.task_adapter, earlier_tasks(recipe, step)
            )
        except XlingError:
            adapter = "ner-en"
        needs = [("task", adapter)]
    if getattr(options, "use_lang_adapter", True):
        needs.append(("lang", getattr(options, "lang_adapter", None) or options.lang))
    return needs


def _task_needs(options, *_) -> list[tuple[str, str]]:
    needs = []
    if options.method == "adapter" and options.use_lang_adapter:
        needs.append(("lang", options.lang_adapter or options.lang))
    return needs + ([("task", options.init_from)] if options.init_from else [])


def _trains(trainer: Callable, summary: Callable) -> Callable:
    return lambda options, console, progress, recipe: console.print(summary(trainer(options, console, progress)))


def _tag(options: TagOptions, console: Console, progress, recipe) -> None:
    from xling.tagging.files import tag_file

    tag_file(options, console)


def _analyze(options: AnalyzeOptions, console: Console, progress, recipe) -> None:
    from xling.analysis.reports import params_table, run_analysis

    result = run_analysis(options, console)
    if options.analysis == "params":
        Console().print(params_table(result, recipe.model))


@dataclass(frozen=True)
class RunKind:
    """What a recipe's `run = ...` is: the command's options, how it runs (`perform(options, console, progress,
    recipe)`), the adapter it saves (kind, name from the options), the adapters it needs (from the options, the
    step, the recipe and the workspace), and whether it scores (a results row) or writes an output file."""

    options: type
    perform: Callable
    saves: Callable[[object], tuple[str, str]] | None = None
    needs: Callable[..., list[tuple[str, str]]] = lambda *_: []
    scores: bool = False
    writes: bool = False


RUNS = {
    "train-lang": RunKind(
        LanguageAdapterOptions, _trains(train_language_adapter, language_report_table), lambda o: ("lang", o.lang)
    ),
    "train-task": RunKind(
        TaskAdapterOptions,
        _trains(train_task_adapter, selection_summary),
        lambda o: ("task", _trained_name(o)),
        _task_needs,
    ),
    "train-fusion": RunKind(
        FusionOptions,
        _trains(train_fusion, lambda report: selection_summary(report, "fusion ")),
        lambda o: ("fusion", _trained_name(o)),
        lambda o, *_: [("task", a) for a in o.adapters] + ([("lang", o.lang)] if o.use_lang_adapter else []),
    ),
    "self-train": RunKind(
        SelfTrainingOptions,
        _trains(self_train, self_training_summary),
        lambda o: ("task", _trained_name(o)),
        lambda o, *_: [("task", o.source), ("lang", o.lang)],
    ),
    "evaluate": RunKind(EvaluationOptions, lambda o, *_: evaluate(o), needs=_tagging_needs, scores=True),
    "tag": RunKind(TagOptions, _tag, needs=_tagging_needs, writes=True),
    "analyze": RunKind(AnalyzeOptions, _analyze, needs=_tagging_needs, writes=True),
}


# A step's keys are its command's options, named as on the command line.
OPTIONS = {run: kind.options for run, kind in RUNS.items()}
KEYS = {run: set(options_of(defaults(cls))) - RUN_LEVEL for run, cls in OPTIONS.items()}
KEYS["evaluate"] |= {"label", "baseline"}  # the row's name in the results table; an earlier row to test it against


def produces(step: Step) -> tuple[str, str] | None:
    """(kind, name) of the adapter a training step saves; `name` names it, else the command's default."""
    saves = RUNS[step.run].saves
    return saves(step_options(step)) if saves else None


def earlier_tasks(recipe: Recipe, step: Step) -> set[str]:
    """The task adapters that the steps before `step` train."""
    return {made[1] for s in recipe.steps[: step.number - 1] if (made := produces(s)) and made[0] == "task"}


def requires(step: Step, recipe: Recipe, workspace: Workspace) -> list[tuple[str, str]]:
    """The adapters a step needs, as (kind, name)."""
    return RUNS[step.run].needs(step_options(step), step, recipe, workspace)


def validate(recipe: Recipe, workspace: Workspace) -> None:
    problems: list[str] = []
    catalog = load_catalog()
    made: set[tuple[str, str]] = set()
    claimed = _own_files(recipe, workspace)
    unreachable: dict[str, FetchError] = {}
    for step in recipe.steps:
        where = step.where(recipe.file)
        if step.run not in KEYS:
            problems.append(f"{where}: unknown run {step.run!r}; choose one of {', '.join(KEYS)}")
            continue
        unknown = set(step.options) - KEYS[step.run]
        problems += [f"{where}: unknown key {key!r}" for key in sorted(unknown)]
        try:
            step_options(step)
            if RUNS[step.run].writes:
                claimed = _claim_output(step, recipe, workspace, claimed)
        except XlingError as err:
            problems.append(f"{where}: {err}")
            continue
        for key in sorted(PATH_KEYS & set(step.options)):
            values = step.options[key] if isinstance(step.options[key], list) else [step.options[key]]
            for value in values:
                try:
                    resolved = _resolved(value, catalog, unreachable)
                except XlingError as err:
                    problems.append(f"{where}: key {key!r}: {err}")
                    continue
                if (
                    hub_dataset_id(resolved) is None
                    and not Path(resolved).exists()
                    and not any(c in resolved for c in "*?[")
                ):
                    problems.append(f"{where}: key {key!r}: {value} not found")
        for kind, name in requires(step, recipe, workspace):
            if is_hub_name(name):  # fetched when the step runs
                continue
            if is_path(name):
                if not Path(name).expanduser().is_dir():
                    problems.append(f"{where}: the {kind} adapter {name} is not a directory")
                continue
            if (kind, name) not in made and not workspace.adapter_dir(kind, name).is_dir():
                problems.append(
                    f"{where}: needs the {kind} adapter {name!r}, which no earlier step trains and the workspace does not hold"
                )
        if produces(step):
            made.add(produces(step))
        problems += _baseline_problems(recipe, step)
    if problems:
        if len(problems) == 1:
            raise XlingError(problems[0])
        raise XlingError(f"recipe {recipe.file} has {len(problems)} problems:\n  " + "\n  ".join(problems))


def _resolved(value: str, catalog: dict, unreachable: dict[str, FetchError]) -> str:
    """resolve(), except that a corpus whose fetch failed once fails again at once: offline, each step naming it
    would otherwise wait through the hub client's retries again."""
    name = value.removeprefix(PREFIX).partition("/")[0] if value.startswith(PREFIX) else None
    if name in unreachable:
        raise unreachable[name]
    try:
        return resolve(value, catalog)
    except FetchError as err:
        unreachable[name] = err
        raise


def _baseline_problems(recipe: Recipe, step: Step) -> list[str]:
    """An evaluate step's `baseline` names an earlier evaluate step on the same data."""
    baseline = step.options.get("baseline")
    if step.run != "evaluate" or baseline is None:
        return []
    earlier = {s.title: s for s in recipe.steps[: step.number - 1] if s.run == "evaluate"}
    if not isinstance(baseline, str) or baseline not in earlier:
        return [f"{step.where(recipe.file)}: baseline {baseline!r} is no earlier evaluate step's title"]
    if earlier[baseline].options.get("data") != step.options.get("data"):
        return [f"{step.where(recipe.file)}: baseline {baseline!r} scores other data; a paired test needs the same"]
    return []


# ---- running ------------------------------------------------------------------------------------------


def run_step(
    step: Step,
    recipe: Recipe,
    workspace: Workspace,
    console: Console,
    overwrite: bool = False,
    progress: TrainingProgress | None = None,
) -> dict | None:
    """Run one step; `progress` shows training (the command line's bar; plain notes when None). Returns the
    result of a step that scores."""
    kind = RUNS[step.run]
    # Commands take `corpus:` names themselves and record them as given, so that reports and model cards name
    # the corpus rather than this machine's copy of it; only tag's input is read as a plain file.
    o = {k: resolve(v) if k == "input" else v for k, v in step.options.items()}
    if kind.writes:
        output = output_path(step, recipe, workspace)
        o["output"] = str(output) if output else None
    run_level = {"model": recipe.model, "workspace": recipe.workspace, "overwrite": overwrite}
    result = kind.perform(step_options(replace(step, options=o), **run_level), console, progress, recipe)
    if not kind.scores:
        return None
    result |= {"label": o.get("label", step.title), "title": step.title, "baseline": o.get("baseline")}
    console.print(
        f"{result['label']}: F1 {100 * result['f1']:.1f} (precision {100 * result['precision']:.1f}, "
        f"recall {100 * result['recall']:.1f}) on {result['sentences']:,} sentences"
    )
    if warning := leakage_warning(result):
        console.print(warning, highlight=False)
    return result


def _own_files(recipe: Recipe, workspace: Workspace) -> dict[Path, str]:
    """The files the recipe itself writes in its results folder, and what each one is."""
    results = results_dir(workspace, recipe)
    own = {results / name: "the recipe's own result file" for name in (STEPS_FILE, "results.md", "results.json")}
    scoring = [step for step in recipe.steps if step.run in RUNS and RUNS[step.run].scores]
    return own | {results / f"{step.title}.json": f"the result of step {step.number}" for step in scoring}


def _claim_output(step: Step, recipe: Recipe, workspace: Workspace, claimed: dict[Path, str]) -> dict[Path, str]:
    """`claimed` with this step's output added; an output that another file of the recipe's takes is refused."""
    output = output_path(step, recipe, workspace)
    if output in claimed:
        raise XlingError(f"key 'output' {output.name!r} is {claimed[output]}; choose another file name")
    return claimed | ({output: f"the output of step {step.number}"} if output else {})


def results_dir(workspace: Workspace, recipe: Recipe) -> Path:
    return workspace.model_dir / "results" / recipe.name


def output_path(step: Step, recipe: Recipe, workspace: Workspace) -> Path | None:
    """A tag or analyze step's `output` (an analysis's default file name), inside the recipe's results; None
    for a tag step that prints."""
    output = step_options(step).output_file()
    return inside(results_dir(workspace, recipe), output, f"key 'output' of step {step.title!r}") if output else None


def output_file(step: Step, recipe: Recipe, workspace: Workspace) -> Path | None:
    """The file whose presence says a step finished (saves are atomic), or None."""
    if produces(step):
        return _adapter_file(workspace, *produces(step))
    if RUNS[step.run].scores:
        return results_dir(workspace, recipe) / f"{step.title}.json"
    return output_path(step, recipe, workspace) if RUNS[step.run].writes else None


def _adapter_file(workspace: Workspace, kind: str, name: str) -> Path:
    directory = workspace.adapter_dir(kind, name)
    return directory / "task.json" if (directory / "task.json").is_file() else directory / "adapter_config.json"


def rerun_reason(step: Step, recipe: Recipe, workspace: Workspace, ran_with: dict) -> str | None:
    """Why a finished step is out of date, as make would judge it: edited options, or inputs saved after it."""
    if step.title in ran_with and ran_with[step.title] != step.options:
        return "its options changed since it ran"
    made_at = output_file(step, recipe, workspace).stat().st_mtime
    newer = [
        name
        for kind, name in requires(step, recipe, workspace)
        if (f := _adapter_file(workspace, kind, name)).is_file() and f.stat().st_mtime > made_at
    ]
    return f"{', '.join(newer)} retrained since it ran" if newer else None


def _ran_with(recipe: Recipe, workspace: Workspace) -> dict:
    """The options each step last ran with (`steps.json` beside the results)."""
    file = results_dir(workspace, recipe) / STEPS_FILE
    ran_with = read_json(file) if file.is_file() else {}
    if not isinstance(ran_with, dict) or not all(isinstance(options, dict) for options in ran_with.values()):
        raise XlingError(f"{file} is damaged (not a table of each step's options); delete it to run every step again")
    return ran_with


def plan(recipe: Recipe, workspace: Workspace) -> list[tuple[Step, str | None]]:
    """Each step with why it must run ("not run yet", edited, inputs retrained), or None when it is done."""
    ran_with = _ran_with(recipe, workspace)
    remade: set[tuple[str, str]] = set()
    planned = []
    for step in recipe.steps:
        out = output_file(step, recipe, workspace)
        reason = rerun_reason(step, recipe, workspace, ran_with) if out and out.is_file() else "not run yet"
        if reason is None and (
            stale := [name for kind, name in requires(step, recipe, workspace) if (kind, name) in remade]
        ):
            reason = f"{', '.join(stale)} will be retrained before it"
        if reason is not None and produces(step):
            remade.add(produces(step))
        planned.append((step, reason))
    return planned


def _run_once(
    recipe: Recipe, console: Console, on_step: Callable[[Step, str], None] | None, progress: TrainingProgress | None
) -> list[dict]:
    """Run every step of one run (one seed) that is not done; returns its evaluation results."""
    workspace = Workspace(recipe.workspace, recipe.model)
    results_path = results_dir(workspace, recipe)
    ran_with = _ran_with(recipe, workspace)
    seed = f"seed {recipe.seeds[0]}, " if recipe.seeds else ""
    results: list[dict] = []
    for step, reason in plan(recipe, workspace):
        where = f"{seed}step {step.number}/{len(recipe.steps)}"
        if reason is None:
            console.print(f"[dim]{where} {step.title}: done already, skipped[/]")
            if on_step:
                on_step(step, "skipped")
        else:
            again = "" if reason == "not run yet" else f", again: {reason}"
            console.rule(f"{where}: {step.title} ({step.run}{again})")
            result = run_step(step, recipe, workspace, console, reason != "not run yet", progress)
            if result is not None:
                write_json_atomic(results_path / f"{step.title}.json", result)
            if on_step:
                on_step(step, "ran")
        # Outputs found without a record are taken as made with the recipe as it stands.
        ran_with[step.title] = step.options
        write_json_atomic(results_path / STEPS_FILE, ran_with)
        if RUNS[step.run].scores:
            results.append(read_json(results_path / f"{step.title}.json"))
    return results


METRICS = ("precision", "recall", "f1")


def combine(runs: dict[int | None, list[dict]]) -> list[dict]:
    """One row per evaluation: with several seeds, the mean of each metric, its standard deviation and the
    per-seed values; always how many sentences it rests on, its 95% interval (sentences, and seeds, resampled),
    how many of them the task was trained on, and the paired test against its `baseline` row."""
    rows, counts = [], {}
    for position, first in enumerate(next(iter(runs.values()))):
        results = [seed_results[position] for seed_results in runs.values()]
        if list(runs) == [None]:
            row = {k: v for k, v in first.items() if k != "sentence_counts"}
        else:
            per_seed = [{"seed": seed, **{m: r[m] for m in METRICS}} for seed, r in zip(runs, results)]
            row = {"label": first["label"], "data": first["data"], "setup": first["setup"], "per_seed": per_seed}
            row["computed_in"] = first.get("computed_in")
            for metric in METRICS:
                row[metric], row[f"{metric}_std"] = spread([run[metric] for run in per_seed])
        seen, key = [r.get("seen_in_training") for r in results], first.get("title", first["label"])
        row |= {"sentences": first["sentences"], "seen_in_training": None if None in seen else max(seen)}
        if all("sentence_counts" in r for r in results):
            counts[key] = [r["sentence_counts"] for r in results]
            row["f1_interval"] = list(interval(counts[key]))
        if key in counts and first.get("baseline") in counts:
            row["versus"] = {"baseline": first["baseline"], **paired(counts[key], counts[first["baseline"]])}
        rows.append(row)
    return rows


def record_evaluations(runs: list[Recipe], rows: list[dict]) -> None:
    """Each task adapter a run trained gets the evaluations of the setups that use it, in its report and model
    card: its own seed's F1 and the mean ± sd over the recipe's seeds."""
    for run in runs:
        workspace, seed = Workspace(run.workspace, run.model), (run.seeds[0] if run.seeds else None)
        for step in run.steps:
            made = produces(step)
            directory = workspace.adapter_dir(*made) if made and made[0] == "task" else None
            if directory is None or not (directory / REPORT_FILE).is_file():
                continue
            evaluations = [evaluation_record(row, seed) for row in rows if f"'{made[1]}'" in row["setup"]]
            if evaluations:
                report = read_report(directory) | {"recipe": run.name, "evaluations": evaluations}
                write_json_atomic(directory / REPORT_FILE, report)
                write_text_atomic(directory / CARD_FILE, model_card(report))


def evaluation_record(row: dict, seed: int | None) -> dict:
    """A results row as an adapter's card shows it: this adapter's seed's F1, and over the seeds."""
    own = next((r["f1"] for r in row.get("per_seed", []) if r["seed"] == seed), row["f1"])
    record = {"label": row["label"], "data": row["data"], "setup": row["setup"], "f1": own}
    if "per_seed" in row:
        record |= {"seeds": [r["seed"] for r in row["per_seed"]], "f1_mean": row["f1"], "f1_std": row["f1_std"]}
    return record


def results_table(rows: list[dict]) -> str:
    """Markdown; with seeds, F1 per seed and mean ± standard deviation (precision and recall as means); the 95%
    interval, the sentences scored, and the paired test against a baseline row where the recipe names one."""
    seeds = [run["seed"] for run in rows[0].get("per_seed", [])]
    columns = ["evaluation", "data", "setup", *(f"F1 seed {s}" for s in seeds), "precision", "recall", "F1"]
    columns += ["95% interval", "sentences", "against baseline"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        cells = [r["label"], Path(r["data"]).parent.name + "/" + Path(r["data"]).name, f"`{r['setup']}`"]
        cells += [f"{100 * run['f1']:.1f}" for run in r.get("per_seed", [])]
        cells += [
            f"{100 * r['precision']:.1f}",
            f"{100 * r['recall']:.1f}",
            _f1(r),
            interval_cell(r),
            sentences_cell(r),
        ]
        cells.append(_versus(r))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _f1(row: dict) -> str:
    return f"{100 * row['f1']:.1f} ± {100 * row['f1_std']:.1f}" if "per_seed" in row else f"{100 * row['f1']:.1f}"


def _versus(row: dict) -> str:
    return f"{difference_cell(row['versus'])} vs {row['versus']['baseline']}" if "versus" in row else ""


def print_plan(recipe: Recipe, console: Console) -> None:
    """What `xling run` would do, step by step (and seed by seed), without doing it."""
    for run in [seeded(recipe, s) for s in recipe.seeds] or [recipe]:
        workspace = Workspace(run.workspace, run.model)
        validate(run, workspace)
        console.print(
            f"[bold]{run.name}[/]{f' seed {run.seeds[0]}' if recipe.seeds else ''}: workspace {workspace.root}"
        )
        for step, reason in plan(run, workspace):
            what = "skip: done" if reason is None else f"run: {reason}"
            console.print(f"  step {step.number}/{len(run.steps)} {step.title} ({step.run}): {what}", highlight=False)


def provenance(recipe: Recipe) -> dict:
    """What a results file says of how it was made (the docs' tables name it)."""
    from xling import __version__
    from xling.device import machine_name

    return {
        "recipe": recipe.name,
        "seeds": recipe.seeds,
        "model": recipe.model,
        "xling_version": __version__,
        "commit": source_commit(),
        "machine": machine_name(),
    }


def source_commit() -> str | None:
    """The git commit xling runs from, when it runs from a clone (None for an installed wheel)."""
    import subprocess

    try:
        found = subprocess.run(
            ["git", "-C", str(Path(__file__).parent), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
    except OSError:  # no git on the machine
        return None
    return found.stdout.strip() or None if found.returncode == 0 else None


def run_recipe(
    path: str | Path,
    console: Console | None = None,
    on_step: Callable[[Step, str], None] | None = None,
    recipe: Recipe | None = None,
    seeds: list[int] | None = None,
    progress: TrainingProgress | None = None,
) -> list[dict]:
    """Validate, then run every step not yet done (once per seed); returns the evaluation rows of the results table.
    `progress` shows each training step's progress (the command line passes its bar)."""
    console = console or Console(stderr=True)
    recipe = recipe or read_recipe(path)
    if seeds:
        recipe = replace(recipe, seeds=list(seeds))
    runs = [seeded(recipe, s) for s in recipe.seeds] or [recipe]
    for run in runs:  # every run checked before any starts
        validate(run, Workspace(run.workspace, run.model))
    rows = combine({run.seeds[0] if recipe.seeds else None: _run_once(run, console, on_step, progress) for run in runs})
    record_evaluations(runs, rows)
    if rows:
        results_path = results_dir(Workspace(recipe.workspace, recipe.model), recipe)
        write_text_atomic(results_path / "results.md", results_table(rows))
        write_json_atomic(results_path / "results.json", provenance(recipe) | {"rows": rows})
        rich_table = Table(
            title=f"Results of {recipe.name}"
            + (f" (seeds {', '.join(map(str, recipe.seeds))})" if recipe.seeds else "")
        )
        for column in ("evaluation", "setup", "P", "R", "F1", "95% interval", "n", "against baseline"):
            rich_table.add_column(column, justify="right" if len(column) <= 2 else "left")
        for r in rows:
            precision_recall = (f"{100 * r[k]:.1f}" for k in ("precision", "recall"))
            rich_table.add_row(
                r["label"], r["setup"], *precision_recall, _f1(r), interval_cell(r), sentences_cell(r), _versus(r)
            )
        Console().print(rich_table)
        console.print(f"results: {results_path / 'results.md'} and results.json")
    return rows
