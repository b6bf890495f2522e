"""`xling self-train ner`: a target-language task adapter from unlabelled text alone.

Each round tags a seeded sample of the unlabelled sentences with `Stack(<lang>, <adapter>)`
(the source adapter in round 1, the previous round's after that), keeps the sentences the
model is sure of (an entity in them, the words of its entities, or with
`confidence_of="words"` every word, tagged with probability at least `threshold`, at most
`max_per_type` sentences per entity type, most confident first), and trains a task adapter
on them, with the `labelled` data of the language if there are any. Every round starts
again from the source adapter, so one round's errors are not compounded in the weights,
only in the labels it passes on. Dev data choose each round's best epoch and then the best
round, nothing else. Rounds are saved as `<name>-round<K>`, each with the sentences it was
trained on (`pseudo_labels.conll`), and the best round is copied to `<name>`; a rerun skips
finished rounds, and an interrupted round resumes like any training.
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from rich.console import Console

from xling.adapters.files import CONFIG_FILE
from xling.adapters.record import AdapterRecord
from xling.data.conll import Sentence, conll_text, read_conll
from xling.data.iob2 import entity_types, type_counts
from xling.data.sources import load_ner
from xling.data.text import read_text
from xling.device import pick_device
from xling.errors import XlingError
from xling.fileio import atomic_directory, write_json_atomic, write_text_atomic
from xling.names import check_lang
from xling.roles import TASK
from xling.tagging.tagger import Tagger
from xling.tagging.words import tokenize
from xling.train.cards.adapter import model_card
from xling.train.cards.common import CARD_FILE
from xling.train.config import SelfTrainingOptions, TaskAdapterOptions, other_sources
from xling.train.processes import process_state, wait_for_everyone
from xling.train.progress import TrainingProgress
from xling.train.report import REPORT_FILE, SELF_TRAINING_FILE, RunReport, SelfTrainingReport, SelfTrainingRound
from xling.train.run import refuse_to_replace
from xling.train.task import train_task_adapter
from xling.trained_tasks import TASK_FILE, TaskRecord, task_text
from xling.workspace import Workspace


def select_confident(
    sentences: list[list[str]],
    tagged: list[list[tuple[str, float]]],
    threshold: float,
    max_per_type: int | None,
    confidence_of: str = "entities",
) -> list[Sentence]:
    """Sentences with an entity whose entities' words (or with `confidence_of="words"` every word) have tag
    probability >= threshold, most confident first, taking a sentence only while each of
    its entity types has fewer than `max_per_type`."""
    candidates = []
    for tokens, words in zip(sentences, tagged):
        tags = [tag for tag, _ in words]
        found = entity_types(tags)
        counted = words if confidence_of == "words" else [(t, p) for t, p in words if t != "O"]
        least = min((p for _, p in counted), default=0.0)
        if found and least >= threshold:
            candidates.append((least, Sentence(tokens, tags), found))
    candidates.sort(key=lambda c: -c[0])
    counts: dict[str, int] = {}
    kept = []
    for _, sentence, found in candidates:
        if max_per_type is not None and any(counts.get(t, 0) >= max_per_type for t in found):
            continue
        for t in found:
            counts[t] = counts.get(t, 0) + 1
        kept.append(sentence)
    return kept


def check_inputs(options: SelfTrainingOptions, workspace: Workspace, final: Path) -> None:
    """What would fail later fails now, with how to fix it: before the corpus is read or anything tagged."""
    refuse_to_replace(final, "task adapter", options.overwrite)
    workspace.task(options.source)
    for source in options.labelled:
        load_ner(source, "train", scheme=options.scheme)
    for other, source in other_sources(options.also_train):
        workspace.lang_adapter(check_lang(other))
        load_ner(source, "train", scheme=options.scheme)


@dataclass
class RoundContext:
    """What every round of one self-training run shares."""

    workspace: Workspace
    console: Console
    processes: object  # `process_state`: this process among those training
    name: str  # the run's; round n saves `<name>-round<n>`
    progress: TrainingProgress | None


def train_round(
    number: int, labeller: str, sentences: list[list[str]], options: SelfTrainingOptions, context: RoundContext
) -> None:
    """Round `number`: tag the corpus with `labeller`, keep the confident sentences, train on them (and the
    labelled ones) from the source adapter; saves `<name>-round<number>` with its pseudo-labels."""
    workspace, console, processes = context.workspace, context.console, context.processes
    round_name = f"{context.name}-round{number}"
    tagger = Tagger.load(options.labeller(labeller))
    with console.status(f"round {number}: tagging {len(sentences):,} sentences with {tagger.setup}"):
        tagged = tagger.tag_words(sentences)
    del tagger
    kept = select_confident(sentences, tagged, options.threshold, options.max_per_type, options.confidence_of)
    if not kept:
        raise XlingError(f"round {number}: no sentence reached the threshold {options.threshold}; lower --threshold")
    pseudo_labels = conll_text(kept)
    data_file = workspace.run_dir(TASK, round_name) / "pseudo_labels.conll"
    if processes.is_main_process:  # every process tagged the same; one writes
        write_text_atomic(data_file, pseudo_labels)
    wait_for_everyone(processes)
    console.print(
        f"round {number}: kept {len(kept):,} of {len(sentences):,} sentences "
        f"({', '.join(f'{t} {n:,}' for t, n in type_counts(s.tags for s in kept).items())})"
    )
    round_options = shared_options(options, TaskAdapterOptions)
    round_options |= {"train": [str(data_file), *options.labelled], "name": round_name}
    train_task_adapter(TaskAdapterOptions(**round_options, init_from=options.source), console, context.progress)
    if processes.is_main_process:
        write_text_atomic(workspace.adapter_dir(TASK, round_name) / "pseudo_labels.conll", pseudo_labels)
    wait_for_everyone(processes)  # the next round loads what the main process saved


def self_train(
    options: SelfTrainingOptions, console: Console | None = None, progress: TrainingProgress | None = None
) -> SelfTrainingReport:
    console = console or Console(stderr=True)
    options = replace(options, lang=check_lang(options.lang))
    workspace = Workspace(options.workspace, options.model)
    name = options.run_name()
    final = workspace.adapter_dir(TASK, name)
    check_inputs(options, workspace, final)
    started = time.perf_counter()
    lines, files = read_text(options.corpus)
    if options.max_sentences and len(lines) > options.max_sentences:
        lines = random.Random(options.training.seed).sample(lines, options.max_sentences)
    sentences = [[token.text for token in tokenize(line)] for line in lines]
    console.print(
        f"self-training [bold]{name}[/] from {options.source}: {len(sentences):,} unlabelled sentences "
        f"from {len(files)} file(s), {options.rounds} round(s), threshold {options.threshold}"
    )
    processes = process_state(pick_device(options.training.device))  # one, or all under torchrun
    context = RoundContext(workspace, console, processes, name, progress)
    labeller, rounds = options.source, []
    for number in range(1, options.rounds + 1):
        target = workspace.adapter_dir(TASK, f"{name}-round{number}")
        if options.overwrite or not target.is_dir():  # else finished by an earlier, interrupted run
            train_round(number, labeller, sentences, options, context)
        report = RunReport.read(target)
        kept = len(read_conll(target / "pseudo_labels.conll"))
        rounds.append(SelfTrainingRound(number, target.name, labeller, kept, report.train_sentences, report.best))
        labeller = target.name
    # Later rounds can drift on their own labels (the first round was best on some seeds): keep the best on dev.
    chosen = max(rounds, key=lambda r: r.best.score if r.best else 0.0)
    result = SelfTrainingReport(
        name=name,
        lang=options.lang,
        source=options.source,
        corpus_files=[str(f) for f in files],
        sentences_tagged=len(sentences),
        labelled=options.labelled,
        also_train=options.also_train,
        threshold=options.threshold,
        confidence_of=options.confidence_of,
        max_per_type=options.max_per_type,
        rounds=rounds,
        chosen_round=chosen.round,
        seconds=round(time.perf_counter() - started, 1),
        saved_to=str(final),
    )
    if processes.is_main_process:
        copy_round(workspace.adapter_dir(TASK, chosen.adapter), final, result, options.overwrite)
    wait_for_everyone(processes)
    return result


def shared_options(options, cls) -> dict:
    """The values of `options` for every field that `cls` shares with it: an option added to both reaches the
    rounds' training without being listed here."""
    return {f.name: getattr(options, f.name) for f in fields(cls) if any(f.name == g.name for g in fields(options))}


def copy_round(source: Path, final: Path, summary: SelfTrainingReport, overwrite: bool) -> None:
    """`final` becomes a copy of the round saved at `source`, under its own name, with the rounds' summary."""
    name = final.name
    with atomic_directory(final, overwrite, replaces=(CONFIG_FILE,)) as staging:
        shutil.copytree(source, staging, dirs_exist_ok=True)
        replace(AdapterRecord.read(staging / CONFIG_FILE), name=name).write(staging / CONFIG_FILE)
        write_text_atomic(staging / TASK_FILE, task_text(replace(TaskRecord.read(staging), name=name)))
        report = RunReport.read(staging)
        report = replace(report, name=name, options=replace(report.options, name=name), saved_to=str(final))
        write_json_atomic(staging / REPORT_FILE, report.to_record())
        write_text_atomic(staging / CARD_FILE, model_card(report))
        write_json_atomic(staging / SELF_TRAINING_FILE, asdict(summary))
