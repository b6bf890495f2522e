"""`xling train-task`, `train-fusion`, `self-train` and `evaluate`: thin commands over `xling.train` and `xling.scoring`."""

from __future__ import annotations

import json
from dataclasses import replace
from enum import Enum

import typer
from rich.console import Console

from xling.adapters import FusionConfig
from xling.cli.options import DECODER, DEVICE, MODEL, PRESET_HELP, WORKSPACE, adapter_config
from xling.cli.progress import TrainingBar
from xling.data.labels import parse_label_map
from xling.scoring import scores_table
from xling.tagging.evaluate import EvaluationOptions, evaluate
from xling.train.fusion import FusionOptions, train_fusion
from xling.train.loop import TrainConfig
from xling.train.self_training import SelfTrainingOptions, self_train
from xling.train.summary import selection_summary, self_training_summary
from xling.train.task import DEFAULT_LEARNING_RATES, TaskAdapterOptions, train_task_adapter

console = Console(stderr=True)
SELF_TRAINING = SelfTrainingOptions(lang="qu", corpus=[], dev="")  # the defaults of `self-train`


class Task(str, Enum):
    ner = "ner"


class Method(str, Enum):
    adapter = "adapter"
    full = "full"
    head = "head"


def _drop(labels: str | None) -> list[str]:
    return [label.strip() for label in labels.split(",")] if labels else []


def train_task(
    task: Task = typer.Argument(..., help="The task: ner."),
    lang: str = typer.Option(
        ..., "--lang", help="Language of the training data; its language adapter is stacked below."
    ),
    train_data: list[str] = typer.Option(
        ...,
        "--train",
        help="Training data: a CoNLL file or a named source such as wikiann:en; repeat to train on several.",
    ),
    dev_data: str = typer.Option(..., "--dev", help="Dev data for model selection and early stopping."),
    name: str = typer.Option(None, help="Name of the trained task adapter (default: TASK-LANG, e.g. ner-en)."),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    method: Method = typer.Option(
        Method.adapter, help="adapter (MAD-X), full (full fine-tuning) or head (only the head)."
    ),
    no_lang_adapter: bool = typer.Option(
        False, "--no-lang-adapter", help="Train the task adapter without a language adapter below it."
    ),
    lang_adapter: str = typer.Option(
        None, help="Language adapter to stack below (default: --lang from the workspace)."
    ),
    init_from: str = typer.Option(None, help="Continue a trained task adapter (few-shot target-language training)."),
    preset: str = typer.Option("pfeiffer", help=PRESET_HELP),
    reduction_factor: float = typer.Option(None, help="Override the preset's reduction factor."),
    non_linearity: str = typer.Option(None, help="Override the preset's non-linearity."),
    leave_out: str = typer.Option(None, help="Comma-separated layer indices without adapters."),
    share_every: int = typer.Option(None, help="Share one adapter across this many consecutive layers."),
    drop_labels: str = typer.Option(None, help="Entity types to turn into O, e.g. MISC."),
    label_map: str = typer.Option(None, help="Rename entity types, e.g. PERSON=PER,LOCATION=LOC."),
    epochs: float = typer.Option(3.0, help="Passes over the training data."),
    steps: int = typer.Option(None, help="Optimiser steps instead of --epochs."),
    batch_size: int = typer.Option(32),
    grad_accum: int = typer.Option(1),
    lr: float = typer.Option(None, help="Learning rate (default: 5e-4 adapter, 5e-5 full, 1e-2 head)."),
    warmup: float = typer.Option(0.06),
    eval_every: int = typer.Option(None, help="Evaluate dev F1 every N steps (default: once per epoch)."),
    patience: int = typer.Option(2, help="Stop after this many evaluations without a better dev F1."),
    checkpoint_every: int = typer.Option(200),
    max_len: int = typer.Option(256, help="Longest window in sub-tokens; longer sentences are windowed."),
    train_limit: int = typer.Option(None, help="Train on the first N sentences only."),
    dev_limit: int = typer.Option(None, help="Select on the first N dev sentences only."),
    decoder: str = DECODER,
    seed: int = typer.Option(42),
    device: str = DEVICE,
    overwrite: bool = typer.Option(False, help="Replace an existing task adapter of the same name."),
    restart: bool = typer.Option(False, help="Discard an interrupted run instead of resuming it."),
):
    """Train a NER task adapter (and its head) over the frozen language adapter, or a baseline."""
    default_lr = DEFAULT_LEARNING_RATES[method.value]
    options = TaskAdapterOptions(
        lang=lang,
        train=train_data[0] if len(train_data) == 1 else train_data,
        dev=dev_data,
        task=task.value,
        name=name,
        model=model,
        workspace=workspace,
        method=method.value,
        use_lang_adapter=not no_lang_adapter,
        lang_adapter=lang_adapter,
        init_from=init_from,
        adapter=adapter_config(preset, reduction_factor, non_linearity, leave_out, share_every),
        training=TrainConfig(
            max_steps=steps,
            epochs=epochs,
            batch_size=batch_size,
            grad_accum=grad_accum,
            learning_rate=lr or default_lr,
            warmup=warmup,
            eval_every=eval_every,
            patience=patience,
            checkpoint_every=checkpoint_every,
            seed=seed,
            device=device,
        ),
        drop_labels=_drop(drop_labels),
        label_map=parse_label_map(label_map),
        max_len=max_len,
        train_limit=train_limit,
        dev_limit=dev_limit,
        decoder=decoder,
        overwrite=overwrite,
        restart=restart,
    )
    report = train_task_adapter(options, console, TrainingBar(console))
    Console().print(selection_summary(report))


def train_fusion_command(
    task: Task = typer.Argument(..., help="The task: ner."),
    lang: str = typer.Option(
        ..., "--lang", help="Language of the training data; its language adapter goes below the fusion."
    ),
    adapters: str = typer.Option(..., help="Task adapters to fuse, comma-separated, e.g. ner-en,ner-es."),
    train_data: str = typer.Option(..., "--train", help="Training data (e.g. the 100 Quechua training sentences)."),
    dev_data: str = typer.Option(..., "--dev", help="Dev data for model selection and early stopping."),
    name: str = typer.Option(None, help="Name of the fusion (default: TASK-fusion-LANG)."),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    no_lang_adapter: bool = typer.Option(False, "--no-lang-adapter", help="Fuse without a language adapter below."),
    temperature: float = typer.Option(1.0, help="Softmax temperature over the fused adapters."),
    value_penalty: float = typer.Option(0.01, help="Weight of the L2 pull of the value matrices towards identity."),
    drop_labels: str = typer.Option(None, help="Entity types to turn into O, e.g. MISC."),
    label_map: str = typer.Option(None, help="Rename entity types, e.g. PERSON=PER."),
    epochs: float = typer.Option(10.0),
    steps: int = typer.Option(None, help="Optimiser steps instead of --epochs."),
    batch_size: int = typer.Option(16),
    lr: float = typer.Option(5e-5, help="Learning rate (AdapterFusion paper: 5e-5)."),
    eval_every: int = typer.Option(None, help="Evaluate dev F1 every N steps (default: once per epoch)."),
    patience: int = typer.Option(3),
    checkpoint_every: int = typer.Option(200),
    decoder: str = DECODER,
    seed: int = typer.Option(42),
    device: str = DEVICE,
    overwrite: bool = typer.Option(False),
    restart: bool = typer.Option(False),
):
    """Train an AdapterFusion layer over frozen task adapters: Stack(LANG, Fuse(ADAPTERS))."""
    report = train_fusion(
        FusionOptions(
            lang=lang,
            adapters=[a.strip() for a in adapters.split(",") if a.strip()],
            train=train_data,
            dev=dev_data,
            task=task.value,
            name=name,
            model=model,
            workspace=workspace,
            use_lang_adapter=not no_lang_adapter,
            fusion=FusionConfig(temperature=temperature, value_penalty=value_penalty),
            training=TrainConfig(
                max_steps=steps,
                epochs=epochs,
                batch_size=batch_size,
                learning_rate=lr,
                eval_every=eval_every,
                patience=patience,
                checkpoint_every=checkpoint_every,
                seed=seed,
                device=device,
            ),
            drop_labels=_drop(drop_labels),
            label_map=parse_label_map(label_map),
            decoder=decoder,
            overwrite=overwrite,
            restart=restart,
        ),
        console,
        TrainingBar(console),
    )
    Console().print(selection_summary(report, "fusion "))


def self_train_command(
    task: Task = typer.Argument(..., help="The task: ner."),
    corpus: list[str] = typer.Argument(..., help="Unlabelled text of the language: files, folders or globs."),
    lang: str = typer.Option(
        ..., "--lang", help="Language of the text; its language adapter goes under the task adapter."
    ),
    source: str = typer.Option(
        SELF_TRAINING.source,
        "--from",
        help="Task adapter that labels the first round and that every round starts from.",
    ),
    dev_data: str = typer.Option(..., "--dev", help="Labelled dev data, used only to pick each round's best epoch."),
    name: str = typer.Option(
        None, help="Name of the result (default: TASK-LANG-self); rounds before the last are NAME-roundK."
    ),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    rounds: int = typer.Option(SELF_TRAINING.rounds, help="Rounds of tagging, selecting and training."),
    threshold: float = typer.Option(
        SELF_TRAINING.threshold, help="Keep a sentence when every word's tag probability is at least this."
    ),
    max_per_type: int = typer.Option(
        SELF_TRAINING.max_per_type, help="At most this many kept sentences per entity type (balance); 0: no cap."
    ),
    max_sentences: int = typer.Option(
        SELF_TRAINING.max_sentences, help="Tag a seeded sample of this many corpus lines per round; 0: all."
    ),
    epochs: float = typer.Option(SELF_TRAINING.training.epochs),
    batch_size: int = typer.Option(SELF_TRAINING.training.batch_size),
    lr: float = typer.Option(SELF_TRAINING.training.learning_rate),
    patience: int = typer.Option(
        SELF_TRAINING.training.patience, help="Stop after this many evaluations without a better dev F1."
    ),
    decoder: str = DECODER,
    seed: int = typer.Option(SELF_TRAINING.training.seed),
    device: str = DEVICE,
    overwrite: bool = typer.Option(False, help="Replace an existing result of the same name."),
    restart: bool = typer.Option(False, help="Discard an interrupted round's training instead of resuming it."),
):
    """Self-training without target labels: tag unlabelled text, keep confident sentences, train on them; repeat."""
    report = self_train(
        SelfTrainingOptions(
            lang=lang,
            corpus=corpus,
            dev=dev_data,
            source=source,
            task=task.value,
            name=name,
            model=model,
            workspace=workspace,
            rounds=rounds,
            threshold=threshold,
            max_per_type=max_per_type or None,
            max_sentences=max_sentences or None,
            training=replace(
                SELF_TRAINING.training,
                epochs=epochs,
                batch_size=batch_size,
                learning_rate=lr,
                patience=patience,
                seed=seed,
                device=device,
            ),
            decoder=decoder,
            overwrite=overwrite,
            restart=restart,
        ),
        console,
        TrainingBar(console),
    )
    Console().print(self_training_summary(report))


def evaluate_command(
    task: Task = typer.Argument(..., help="The task: ner."),
    data: str = typer.Argument(..., help="Labelled data: a CoNLL file or a named source such as wikiann:qu."),
    lang: str = typer.Option(
        ..., "--lang", help="Language of the data: its language adapter is stacked under the task adapter."
    ),
    task_adapter: str = typer.Option(
        None,
        "--task-adapter",
        "-t",
        help="Trained task (name or directory) (default: ner-LANG if trained, else ner-en).",
    ),
    fusion: str = typer.Option(None, help="A trained fusion to evaluate instead of a single task adapter."),
    no_lang_adapter: bool = typer.Option(
        False, "--no-lang-adapter", help="Evaluate the task adapter without any language adapter."
    ),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    drop_labels: str = typer.Option(None, help="Entity types to turn into O in the gold data, e.g. MISC."),
    label_map: str = typer.Option(None, help="Rename entity types in the gold data, e.g. PERSON=PER."),
    batch_size: int = typer.Option(64),
    decoder: str = DECODER,
    as_json: bool = typer.Option(False, "--json", help="Print the scores as JSON."),
):
    """Score a trained task on labelled data with seqeval (strict IOB2, entity level)."""
    result = evaluate(
        EvaluationOptions(
            data=data,
            lang=lang,
            task_adapter=task_adapter,
            fusion=fusion,
            model=model,
            workspace=workspace,
            use_lang_adapter=not no_lang_adapter,
            drop_labels=_drop(drop_labels),
            label_map=parse_label_map(label_map),
            batch_size=batch_size,
            decoder=decoder,
        )
    )
    if result["types_not_predicted"]:
        missing = ",".join(result["types_not_predicted"])
        console.print(
            f"[yellow]note:[/] the data has entity types that {result['task_adapter']} never predicts ({missing}); they "
            f"count as missed. --drop-labels {missing} leaves them out, --label-map renames them."
        )
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        Console().print(
            scores_table(result, f"{task.value} on {data}: {result['setup']} ({result['sentences']:,} sentences)")
        )
