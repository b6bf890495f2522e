"""Active learning on Quechua, simulated: the annotator is the labels of WikiANN-qu `extra` (2,239 silver
sentences). Each round `xling select`'s code picks 25 sentences (spans mode: 25 spans) with the current task
adapter, the labels answer them, and the task adapter is trained again from `ner-en` on every answer so far
with the annotation page's retraining settings; WikiANN-qu dev F1 after each round.

In spans mode the annotator labels the proposed span's words, widened to every gold entity it touches (as a
person fixing its boundaries would); the sentence's other words stay unjudged (`?`), left out of the loss, or
with `--unjudged o` taught as `O` (what partial labels would cost if nobody marked them).

Starts from the `lang-qu`, `lang-en` and `ner-en` adapters of `--workspace`, trained there by the zero-shot steps
of `recipes/quality-qu.toml` (seed 1) when missing; every run of a setting and seed starts from the same
`ner-en`, so the seeds vary the selection and the retraining. Writes `results/active-qu/<setting>.json` and the
learning curves `docs/img/active-qu.png`. Each round is a training run: on 2 CPU cores one to three minutes,
some six hours for every setting and seed; `--jobs 15` runs them side by side on a GPU. A run saves its state
after every round (`<workspace>/seed-1/active-runs/`), so a stopped run, or one copied from another machine
with that folder (its last adapter is trained again if missing), goes on from its last round; `--report`
writes the results from the saved rounds alone.

    python -m bench.active_learning --seeds 1,2,3                     # the four settings
    python -m bench.active_learning --settings entity:spans --unjudged o
    python -m bench.active_learning --settings 'random>uncertainty:correct,random+uncertainty:correct'
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

from bench.common import REPO, corpora_root
from xling.annotation.options import SelectOptions
from xling.annotation.retrain import retraining_options
from xling.annotation.select import corpus_sentences, eligible, rank, sentence_id
from xling.annotation.strategies import Candidate, entity_spans, pick
from xling.data.conll import UNJUDGED, Sentence, conll_text, read_conll
from xling.fileio import write_json_atomic, write_text_atomic

ROUND = 25
MODEL = "e5-small"
ZERO_SHOT = {"lang-qu", "lang-en", "ner-en"}


def oracle(candidate: Candidate, gold: list[str], mode: str) -> list[str]:
    """What the annotator answers: the whole sentence, or the proposed span widened to the gold entities it
    touches, the rest unjudged."""
    if mode == "correct":
        return list(gold)
    start, end = candidate.focus.start, candidate.focus.end
    for span in entity_spans(gold, [1.0] * len(gold)):  # the gold entities (certain: no doubtful runs)
        if span.start < end and start < span.end:
            start, end = min(start, span.start), max(end, span.end)
    tags = [UNJUDGED] * len(gold)
    tags[start:end] = gold[start:end]
    return tags


def starting_adapters(workspace: Path) -> None:
    """The zero-shot steps of the quality recipe (seed 1), unless `workspace` has their adapters already."""
    from xling.recipes import read_recipe, run_recipe

    if (workspace / "seed-1" / "multilingual-e5-small" / "task" / "ner-en").is_dir():
        return
    recipe = read_recipe(REPO / "recipes" / "quality-qu.toml")
    steps = [replace(s, number=n + 1) for n, s in enumerate(s for s in recipe.steps if s.title in ZERO_SHOT)]
    run_recipe(recipe.file, recipe=replace(recipe, workspace=str(workspace), steps=steps, seeds=[1]))


def run_name(setting: str, unjudged: str) -> str:
    name = setting.replace(">", "-then-").replace("+", "-and-").replace(":", "-")
    return name + ("-unjudged-as-o" if unjudged == "o" else "")


def state_file(workspace: str, name: str, seed: int) -> Path:
    return Path(workspace) / "active-runs" / f"{name}-{seed}.json"


def round_parts(strategy: str, number: int) -> list[tuple[str, int]]:
    """(strategy, sentences) for round `number`: `a>b` is `a` for the first round, then `b` (a cold start);
    `a+b` takes half of every round from each."""
    if ">" in strategy:
        first, then = strategy.split(">")
        return [(first if number == 1 else then, ROUND)]
    if "+" in strategy:
        first, second = strategy.split("+")
        return [(first, ROUND - ROUND // 2), (second, ROUND // 2)]
    return [(strategy, ROUND)]


def choose(options: SelectOptions, strategy: str, number: int, tagger, taken: set[str]) -> list[Candidate]:
    """The round's sentences, picked by `xling select`'s code with each part's strategy."""
    chosen: list[Candidate] = []
    for part, size in round_parts(strategy, number):
        part_options = replace(options, strategy=part, size=size)
        stream = eligible(part_options, corpus_sentences(options.corpus), taken | {c.key for c in chosen})
        chosen += pick(rank(part_options, tagger, stream), size, part_options.cap, options.mode)
    return chosen


def train_round(answers: list[Sentence], adapter: str, seed: int, workspace: str, unjudged: str, epochs: int):
    """The task adapter trained again from `ner-en` on every answer so far, with the annotation page's settings;
    its training report."""
    from xling.train.task import train_task_adapter

    taught = [Sentence(s.tokens, [("O" if t == UNJUDGED and unjudged == "o" else t) for t in s.tags]) for s in answers]
    train_file = Path(workspace) / f"{adapter}.conll"
    write_text_atomic(train_file, conll_text(taught))
    where = {"seed": seed, "model": MODEL, "workspace": workspace, "precision": "fp32"}
    options = retraining_options("qu", str(train_file), "corpus:wikiann-qu/dev", "ner-en", adapter, epochs, **where)
    report = train_task_adapter(options)
    train_file.unlink()
    return report


def simulate(setting: str, seed: int, workspace: str, rounds: int, unjudged: str, epochs: int) -> list[dict]:
    """One run: the dev F1 after each round, with the sentences and words annotated so far. The run's state
    (answers, curve, the latest adapter's name) is saved after every round, so a stopped run goes on from its
    last round, on this machine or another."""
    from xling.device import machine_name
    from xling.tagging.tagger import Tagger
    from xling.workspace import Workspace

    strategy, mode = setting.split(":")
    pool = corpora_root() / "ner" / "wikiann-qu" / "extra"
    gold = {sentence_id(" ".join(s.tokens)): s.tags for s in read_conll(pool)}
    options = SelectOptions(corpus=str(pool), lang="qu", mode=mode, size=ROUND, seed=seed)
    options = replace(options, min_words=1, max_words=1000, workspace=workspace, model=MODEL, precision="fp32")
    name, saved = run_name(setting, unjudged), state_file(workspace, run_name(setting, unjudged), seed)
    state = json.loads(saved.read_text()) if saved.exists() else {"curve": [], "answers": [], "adapter": "ner-en"}
    answers = [Sentence(tokens, tags) for tokens, tags in state["answers"]]
    taken, adapter, curve = {sentence_id(" ".join(s.tokens)) for s in answers}, state["adapter"], state["curve"]
    adapters = Workspace(workspace, MODEL)
    if len(curve) < rounds and not adapters.adapter_dir("task", adapter).is_dir():
        train_round(answers, adapter, seed, workspace, unjudged, epochs)  # the state came without its adapter
    for number in range(len(curve) + 1, rounds + 1):
        started = time.perf_counter()
        tagger = Tagger.load(lang="qu", adapter=adapter, model=MODEL, workspace=workspace, precision="fp32")
        for candidate in choose(options, strategy, number, tagger, taken):
            taken.add(candidate.key)
            tokens = [candidate.text[s:e] for s, e in candidate.words]
            answers.append(Sentence(tokens, oracle(candidate, gold[candidate.key], mode)))
        previous, adapter = adapter, f"al-{name}-{seed}-r{number}"
        report = train_round(answers, adapter, seed, workspace, unjudged, epochs)
        words = sum(1 for s in answers for t in s.tags if t != UNJUDGED)
        curve.append({"round": number, "sentences": len(answers), "words": words, "f1": report["best"]["f1"]})
        curve[-1] |= {"seconds": round(time.perf_counter() - started, 1), "machine": machine_name()}
        write_json_atomic(saved, {"curve": curve, "answers": [[s.tokens, s.tags] for s in answers], "adapter": adapter})
        if previous != "ner-en":  # only the latest round's adapter is needed to go on
            shutil.rmtree(adapters.adapter_dir("task", previous), ignore_errors=True)
        print(json.dumps({"setting": name, "seed": seed, **curve[-1]}), flush=True)
    return curve[:rounds]


def rows(curves: dict[int, list[dict]], label: str) -> list[dict]:
    """One row per round, the seeds' F1 and annotated words side by side."""
    table = []
    for position in range(min(len(c) for c in curves.values())):
        per_seed = [{"seed": seed, **curve[position]} for seed, curve in curves.items()]
        values = [run["f1"] for run in per_seed]
        row = {"label": f"{label}, {per_seed[0]['sentences']} answers", "data": "corpus:wikiann-qu/dev"}
        row |= {"setup": "Stack('lang-qu', <retrained from ner-en>)", "computed_in": "fp32", "per_seed": per_seed}
        row |= {"f1": statistics.fmean(values), "f1_std": statistics.stdev(values) if len(values) > 1 else 0.0}
        row["words"] = statistics.fmean(run["words"] for run in per_seed)
        table.append(row)
    return table


def plot(results: Path, out: Path) -> None:
    """F1 against annotated sentences and against annotated words, mean and spread over seeds, per setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for path in sorted(results.glob("*.json")):
        data = json.loads(path.read_text())
        for axis, x in zip(axes, ("sentences", "words")):
            xs = [statistics.fmean(s[x] for s in r["per_seed"]) for r in data["rows"]]
            mean = [100 * r["f1"] for r in data["rows"]]
            spread = [100 * r["f1_std"] for r in data["rows"]]
            axis.plot(xs, mean, marker="o", markersize=3, label=path.stem)
            axis.fill_between(
                xs, [m - s for m, s in zip(mean, spread)], [m + s for m, s in zip(mean, spread)], alpha=0.2
            )
            axis.set_xlabel(f"annotated {x}")
    axes[0].set_ylabel("WikiANN-qu dev F1")
    axes[0].legend(fontsize=8)
    figure.suptitle("Active learning on Quechua, mean ± sd over seeds")
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)


def machines(curves: dict[int, list[dict]]) -> str:
    """Which machines ran which rounds (a run may go on elsewhere from its saved state)."""
    spans: list[list] = []
    for position in range(min(len(c) for c in curves.values())):
        name = " and ".join(sorted({curve[position]["machine"] for curve in curves.values()}))
        if spans and spans[-1][0] == name:
            spans[-1][2] = position + 1
        else:
            spans.append([name, position + 1, position + 1])
    if len(spans) == 1:
        return spans[0][0]
    return "; ".join(
        f"{name} (round {first})" if first == last else f"{name} (rounds {first}-{last})" for name, first, last in spans
    )


def write_results(results: Path, name: str, curves: dict[int, list[dict]]) -> None:
    from xling import __version__
    from xling.recipes import source_commit

    data = {"recipe": f"active learning, {name}", "seeds": list(curves), "model": MODEL}
    data |= {"xling_version": __version__, "commit": source_commit()}
    data["machine"] = machines(curves)
    data["rows"] = rows(curves, name)
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")


def saved_curves(workspace: str, name: str, seeds: list[int], rounds: int) -> dict[int, list[dict]]:
    """The seeds' curves as far as their saved states go (`--report`)."""
    files = {seed: state_file(workspace, name, seed) for seed in seeds}
    return {seed: json.loads(f.read_text())["curve"][:rounds] for seed, f in files.items() if f.exists()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", default="random:correct,uncertainty:correct,entity:correct,entity:spans")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--rounds", type=int, default=16, help="rounds of 25 (16: up to 400 answers)")
    parser.add_argument("--unjudged", choices=("ignore", "o"), default="ignore")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--workspace", default=str(REPO / "xling-workspace" / "active-qu"))
    parser.add_argument("--jobs", type=int, default=1, help="runs side by side (on a GPU: one per setting and seed)")
    parser.add_argument("--report", action="store_true", help="only write results from the runs' saved rounds")
    parser.add_argument("--results", default=str(REPO / "results" / "active-qu"), help="where results go")
    parser.add_argument("--plot", default=str(REPO / "docs" / "img" / "active-qu.png"), help="the learning curves")
    args = parser.parse_args()
    workspace = str(Path(args.workspace) / "seed-1")
    results, seeds = Path(args.results), [int(s) for s in args.seeds.split(",")]
    names = {setting: run_name(setting, args.unjudged) for setting in args.settings.split(",")}
    if not args.report:
        starting_adapters(Path(args.workspace))
        runs = [(setting, seed) for setting in names for seed in seeds]
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            for future in [
                pool.submit(simulate, *run, workspace, args.rounds, args.unjudged, args.epochs) for run in runs
            ]:
                future.result()
    for name in names.values():
        if curves := saved_curves(workspace, name, seeds, args.rounds):
            write_results(results, name, curves)
    plot(results, Path(args.plot))


if __name__ == "__main__":
    main()
