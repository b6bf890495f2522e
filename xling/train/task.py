"""`xling train-task ner`: a NER task adapter (or a baseline) on labelled data.

Methods: `adapter` (MAD-X: a task adapter and head, stacked on the frozen language
adapter of the training language unless `use_lang_adapter` is off), `full` (full
fine-tuning of the encoder with the head) and `head` (only the classification head).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import torch
from rich.console import Console

from xling.adapters import AdaptedModel, Stack
from xling.adapters.composition import lang_adapter_name
from xling.adapters.heads import tagging_head
from xling.adapters.registry import AdapterChoice, kind_of
from xling.adapters.saving import load
from xling.data.fingerprints import FINGERPRINTS_FILE, fingerprints, fingerprints_text, read_fingerprints
from xling.data.iob2 import entity_types
from xling.data.labels import label_list, relabel
from xling.data.sources import load_ner, load_scored
from xling.errors import XlingError
from xling.given_data import sources_of
from xling.methods import METHODS, Method
from xling.models import load_model
from xling.names import check_lang
from xling.options import defaults
from xling.roles import LANG, TASK
from xling.train.config import TaskAdapterOptions, TrainConfig, other_sources
from xling.train.progress import TrainingProgress
from xling.train.report import Resolved, RunReport
from xling.train.run import start
from xling.train.token_classification import TaggingObjective
from xling.trained_tasks import TaskRecord, load_task_model, save_task
from xling.workspace import Workspace


def read_data(options: TaskAdapterOptions) -> tuple[list, list, dict[str, list]]:
    """Training and dev sentences (relabelled, limited), and each other language's training sentences."""
    train_data = relabel(
        [s for source in sources_of(options.train) for s in load_ner(source, "train", scheme=options.scheme)],
        options.drop_labels,
        options.label_map,
    )[: options.train_limit]
    dev_data = load_scored(options.dev, options.dev_limit, options.drop_labels, options.label_map, options.scheme)
    other_data: dict[str, list] = {}  # per language, its sources read one after the other
    for other, source in other_sources(options.also_train):
        sentences = relabel(load_ner(source, "train", scheme=options.scheme), options.drop_labels, options.label_map)
        other_data.setdefault(check_lang(other), []).extend(sentences)
    if not train_data or not dev_data or not all(other_data.values()):
        raise XlingError("the training and dev data must each hold at least one sentence")
    return train_data, dev_data, other_data


def task_model(
    options: TaskAdapterOptions, workspace: Workspace, name: str, sentences: list, console: Console
) -> tuple[AdaptedModel, object, list[str]]:
    """The model with the task's head (and adapter): continued from `init_from`, or new over `sentences`' labels."""
    if not options.init_from:
        encoder, tokenizer = load_model(options.model, words_tokenizer=True)
        model = AdaptedModel(encoder)
        labels = label_list(sentences)
        model.add_head(name, tagging_head(model, labels))
        if METHODS[options.method].adapters:
            model.add_adapter(name, options.adapter.config)
        return model, tokenizer, labels
    model, tokenizer, init_record = load_task_model(options.model, workspace.task(options.init_from))
    if init_record.method != options.method:
        raise XlingError(
            f"--init-from {options.init_from} was trained with method {init_record.method}, not {options.method}"
        )
    model.heads[name] = model.heads.pop(init_record.name)
    if METHODS[init_record.method].adapters:
        model.adapters[name] = model.adapters.pop(init_record.name)
        kept = model.adapters[name].config
        if options.adapter != defaults(type(options)).adapter and options.adapter.config != kept:  # given
            console.print(
                f"[yellow]note:[/] --init-from {options.init_from} continues its {kind_of(kept).name} adapter as "
                "trained; the adapter options given are not used"
            )
    return model, tokenizer, model.heads[name].labels


def run_record(
    options: TaskAdapterOptions,
    model: AdaptedModel,
    name: str,
    labels: list[str],
    lang_dir: Path | None,
    other_dirs: dict[str, Path],
    training: TrainConfig,
) -> tuple[TaskAdapterOptions, Resolved]:
    """What the run trains with, as it resolved the options, and what it resolved beside them."""
    resolved_options = replace(
        options,
        name=name,
        lang=check_lang(options.lang),
        lang_adapter=str(lang_dir) if lang_dir else None,
        # with --init-from the continued adapter's architecture, not the options' default
        adapter=AdapterChoice.of(model.adapters[name].config) if name in model.adapters else options.adapter,
        training=training,
    )
    others = {other: str(path) for other, path in other_dirs.items()}
    return resolved_options, Resolved(other_lang_adapters=others, labels=labels)


def note_unseen_types(dev_data: list, labels: list[str], console: Console) -> None:
    unseen = sorted(entity_types(tag for s in dev_data for tag in s.tags) - entity_types(labels))
    if unseen:
        console.print(
            f"[yellow]note:[/] the dev data has entity types the training data lacks ({', '.join(unseen)}); "
            "they count as missed in dev F1 (--drop-labels leaves them out)"
        )


def train_task_adapter(
    options: TaskAdapterOptions, console: Console | None = None, progress: TrainingProgress | None = None
) -> RunReport:
    console, lang, workspace, run = start(options, TASK, console)
    method, name = METHODS[options.method], run.target.name  # the method checked with the options
    train_data, dev_data, other_data = read_data(options)
    stacked_lang = method.adapters and options.use_lang_adapter
    lang_dir = workspace.lang_adapter(options.lang_adapter or lang) if stacked_lang else None
    torch.manual_seed(options.training.seed)
    every_sentence = train_data + [s for sentences in other_data.values() for s in sentences]
    model, tokenizer, labels = task_model(options, workspace, name, every_sentence, console)
    lang_name = load(model, lang_dir, name=lang_adapter_name(lang), head=False, role=LANG) if lang_dir else None
    setup = (Stack(lang_name, name) if lang_name else name) if method.adapters else None
    other_dirs = {other: workspace.lang_adapter(other) for other in other_data if other != lang} if stacked_lang else {}
    # each other language's sentences run through its own language adapter under the same task adapter (loaded
    # before train_adapter, which freezes it)
    more_train = [
        (
            Stack(load(model, other_dirs[other], name=lang_adapter_name(other), head=False, role=LANG), name)
            if other in other_dirs
            else setup,
            sentences,
        )
        for other, sentences in other_data.items()
    ]
    counts = model.train_adapter(setup, train=[name]) if setup else _train_without_adapters(model, name, method)
    note_unseen_types(dev_data, labels, console)
    objective = TaggingObjective.from_options(name, train_data, dev_data, tokenizer, model, options, more_train)
    also = "".join(f" + {len(sentences):,} {other}" for other, sentences in other_data.items())
    console.print(
        f"training {options.method} [bold]{name}[/] on {len(train_data):,} sentences{also} ({len(objective.windows):,} windows), "
        f"labels {', '.join(labels)}; {f'setup {setup}' if setup else 'no adapters'}; {counts}"
    )
    training = replace(options.training, learning_rate=options.training.learning_rate or method.learning_rate)
    recorded, resolved = run_record(options, model, name, labels, lang_dir, other_dirs, training)
    run.train(model, objective, recorded, counts, f"train-task {name}", progress, resolved)
    report = run.report(
        name=name,
        task=options.task,
        lang=lang,
        method=options.method,
        model=options.model,
        lang_adapter=lang_name and str(lang_dir),
        labels=labels,
        train_sentences=len(train_data),
        also_train_sentences={other: len(sentences) for other, sentences in other_data.items()},
        dev_sentences=len(dev_data),
    )
    record = TaskRecord(
        name, options.task, lang, options.method, str(lang_dir) if lang_dir else None, labels, options.decoder
    )
    # it learned what it continues from too; when that does not say, neither can this (no file: unknown)
    inherited = read_fingerprints(workspace.task(options.init_from)) if options.init_from else set()
    prints = None if inherited is None else fingerprints(s.tokens for s in every_sentence) | inherited
    extra = {} if prints is None else {FINGERPRINTS_FILE: fingerprints_text(prints)}
    return run.save(
        report, lambda target, more: save_task(model, tokenizer, record, target, options.overwrite, more | extra)
    )


def _train_without_adapters(model: AdaptedModel, name: str, method: Method):
    """Baselines: the whole encoder and the head (`full`), or the head alone (`head`)."""
    model.set_active(None)
    model.requires_grad_(False)
    model.heads[name].requires_grad_(True)
    if method.trains_encoder:
        model.encoder.requires_grad_(True)
        pooler = getattr(model.encoder, "pooler", None)
        if pooler is not None:  # unused by tagging; DDP needs every trained weight to get a gradient
            pooler.requires_grad_(False)
    model.train()
    return model.parameter_count()
