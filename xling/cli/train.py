"""`xling train-lang`, `train-task`, `train-fusion` and `self-train`: thin commands over `xling.train`.

The training functions (and torch with them) are imported when a command runs; its options and help come
from `xling.train.config` alone.

Each option's default and help come from the command's options dataclass (`option`), and the
options are turned into that dataclass by `xling.options.build`, as recipe steps are.
"""

from __future__ import annotations

from enum import Enum

import typer
from rich.console import Console

from xling.adapters.registry import KINDS
from xling.cli.options import DEVICE, MODEL, PRECISION, WORKSPACE, Task, argument, option
from xling.cli.progress import TrainingBar
from xling.options import build, defaults
from xling.train.config import (
    DEFAULT_LEARNING_RATES,
    METHODS,
    FusionOptions,
    LanguageAdapterOptions,
    SelfTrainingOptions,
    TaskAdapterOptions,
)

console = Console(stderr=True)
# Instances whose values are the defaults each command shows.
LANG = defaults(LanguageAdapterOptions)
TASK = defaults(TaskAdapterOptions)
FUSION = defaults(FusionOptions)
SELF_TRAINING = defaults(SelfTrainingOptions)
METHOD_LEARNING_RATES = ", ".join(f"{rate:g} {method}" for method, rate in DEFAULT_LEARNING_RATES.items())


Method = Enum("Method", {method: method for method in METHODS}, type=str)
AdapterKindName = Enum("AdapterKindName", {kind: kind for kind in KINDS}, type=str)


def train_lang(
    lang: str = argument(LANG, "lang"),
    corpus: list[str] = argument(LANG, "corpus"),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    adapter_kind: AdapterKindName = option(LANG, "adapter_kind"),
    preset: str = option(LANG, "preset"),
    reduction_factor: float = option(LANG, "reduction_factor"),
    non_linearity: str = option(LANG, "non_linearity"),
    leave_out: str = option(LANG, "leave_out"),
    share_every: int = option(LANG, "share_every"),
    lora_rank: int = option(LANG, "lora_rank"),
    lora_alpha: float = option(LANG, "lora_alpha"),
    lora_dropout: float = option(LANG, "lora_dropout"),
    lora_targets: str = option(LANG, "lora_targets"),
    steps: int = option(LANG, "steps"),
    epochs: float = option(LANG, "epochs"),
    batch_size: int = option(LANG, "batch_size"),
    grad_accum: int = option(LANG, "grad_accum"),
    lr: float = option(LANG, "lr"),
    warmup: float = option(LANG, "warmup"),
    seq_len: int = option(LANG, "seq_len"),
    mask_prob: float = option(LANG, "mask_prob"),
    whole_word: bool = option(LANG, "whole_word"),
    vocab_from_corpus: bool = option(LANG, "vocab_from_corpus"),
    held_out: float = option(LANG, "held_out"),
    seed: int = option(LANG, "seed"),
    encoder_dropout: bool = option(LANG, "encoder_dropout"),
    eval_every: int = option(LANG, "eval_every"),
    checkpoint_every: int = option(LANG, "checkpoint_every"),
    device: str = DEVICE,
    precision: str = PRECISION,
    overwrite: bool = option(LANG, "overwrite"),
    restart: bool = option(LANG, "restart"),
):
    """Train a language adapter by masked-language modelling on unlabelled text."""
    from xling.train.language import train_language_adapter
    from xling.train.summary import language_report_table

    report = train_language_adapter(
        build(LanguageAdapterOptions, {**locals(), "adapter_kind": adapter_kind and adapter_kind.value}),
        console,
        TrainingBar(console),
    )
    Console().print(language_report_table(report))


def train_task(
    task: Task = typer.Argument(..., help="The task: ner."),
    lang: str = option(TASK, "lang"),
    train: list[str] = option(TASK, "train"),
    dev: str = option(TASK, "dev"),
    also_train: list[str] = option(TASK, "also_train"),
    name: str = option(TASK, "name"),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    method: Method = option(TASK, "method"),
    no_lang_adapter: bool = option(TASK, "no_lang_adapter"),
    lang_adapter: str = option(TASK, "lang_adapter"),
    init_from: str = option(TASK, "init_from"),
    adapter_kind: AdapterKindName = option(TASK, "adapter_kind"),
    preset: str = option(TASK, "preset"),
    reduction_factor: float = option(TASK, "reduction_factor"),
    non_linearity: str = option(TASK, "non_linearity"),
    leave_out: str = option(TASK, "leave_out"),
    share_every: int = option(TASK, "share_every"),
    lora_rank: int = option(TASK, "lora_rank"),
    lora_alpha: float = option(TASK, "lora_alpha"),
    lora_dropout: float = option(TASK, "lora_dropout"),
    lora_targets: str = option(TASK, "lora_targets"),
    drop_labels: str = option(TASK, "drop_labels"),
    label_map: str = option(TASK, "label_map"),
    epochs: float = option(TASK, "epochs"),
    steps: int = option(TASK, "steps"),
    batch_size: int = option(TASK, "batch_size"),
    grad_accum: int = option(TASK, "grad_accum"),
    lr: float = typer.Option(None, help=f"Peak learning rate (default: {METHOD_LEARNING_RATES})."),
    warmup: float = option(TASK, "warmup"),
    eval_every: int = option(TASK, "eval_every"),
    patience: int = option(TASK, "patience"),
    checkpoint_every: int = option(TASK, "checkpoint_every"),
    max_len: int = option(TASK, "max_len"),
    train_limit: int = option(TASK, "train_limit"),
    dev_limit: int = option(TASK, "dev_limit"),
    decoder: str = option(TASK, "decoder"),
    seed: int = option(TASK, "seed"),
    encoder_dropout: bool = option(TASK, "encoder_dropout"),
    device: str = DEVICE,
    precision: str = PRECISION,
    overwrite: bool = option(TASK, "overwrite"),
    restart: bool = option(TASK, "restart"),
):
    """Train a NER task adapter (and its head) over the frozen language adapter, or a baseline."""
    options = build(
        TaskAdapterOptions,
        {**locals(), "task": task.value, "method": method.value, "adapter_kind": adapter_kind and adapter_kind.value},
    )
    from xling.train.summary import selection_summary
    from xling.train.task import train_task_adapter

    Console().print(selection_summary(train_task_adapter(options, console, TrainingBar(console))))


def train_fusion_command(
    task: Task = typer.Argument(..., help="The task: ner."),
    lang: str = option(FUSION, "lang"),
    adapters: str = option(FUSION, "adapters"),
    train: str = option(FUSION, "train"),
    dev: str = option(FUSION, "dev"),
    name: str = option(FUSION, "name"),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    no_lang_adapter: bool = option(FUSION, "no_lang_adapter"),
    temperature: float = option(FUSION, "temperature"),
    value_penalty: float = option(FUSION, "value_penalty"),
    drop_labels: str = option(FUSION, "drop_labels"),
    label_map: str = option(FUSION, "label_map"),
    epochs: float = option(FUSION, "epochs"),
    steps: int = option(FUSION, "steps"),
    batch_size: int = option(FUSION, "batch_size"),
    grad_accum: int = option(FUSION, "grad_accum"),
    lr: float = option(FUSION, "lr"),
    warmup: float = option(FUSION, "warmup"),
    eval_every: int = option(FUSION, "eval_every"),
    patience: int = option(FUSION, "patience"),
    checkpoint_every: int = option(FUSION, "checkpoint_every"),
    max_len: int = option(FUSION, "max_len"),
    decoder: str = option(FUSION, "decoder"),
    seed: int = option(FUSION, "seed"),
    encoder_dropout: bool = option(FUSION, "encoder_dropout"),
    device: str = DEVICE,
    precision: str = PRECISION,
    overwrite: bool = option(FUSION, "overwrite"),
    restart: bool = option(FUSION, "restart"),
):
    """Train an AdapterFusion layer over frozen task adapters: Stack(LANG, Fuse(ADAPTERS))."""
    options = build(FusionOptions, {**locals(), "task": task.value})
    from xling.train.fusion import train_fusion
    from xling.train.summary import selection_summary

    Console().print(selection_summary(train_fusion(options, console, TrainingBar(console)), "fusion "))


def self_train_command(
    task: Task = typer.Argument(..., help="The task: ner."),
    corpus: list[str] = argument(SELF_TRAINING, "corpus"),
    lang: str = option(SELF_TRAINING, "lang"),
    source: str = option(SELF_TRAINING, "from", "--from"),
    dev: str = option(SELF_TRAINING, "dev"),
    labelled: list[str] = option(SELF_TRAINING, "labelled"),
    also_train: list[str] = option(SELF_TRAINING, "also_train"),
    name: str = option(SELF_TRAINING, "name"),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    rounds: int = option(SELF_TRAINING, "rounds"),
    threshold: float = option(SELF_TRAINING, "threshold"),
    confidence_of: str = option(SELF_TRAINING, "confidence_of"),
    max_per_type: int = option(SELF_TRAINING, "max_per_type"),
    max_sentences: int = option(SELF_TRAINING, "max_sentences"),
    drop_labels: str = option(SELF_TRAINING, "drop_labels"),
    label_map: str = option(SELF_TRAINING, "label_map"),
    epochs: float = option(SELF_TRAINING, "epochs"),
    steps: int = option(SELF_TRAINING, "steps"),
    batch_size: int = option(SELF_TRAINING, "batch_size"),
    grad_accum: int = option(SELF_TRAINING, "grad_accum"),
    lr: float = option(SELF_TRAINING, "lr"),
    warmup: float = option(SELF_TRAINING, "warmup"),
    eval_every: int = option(SELF_TRAINING, "eval_every"),
    patience: int = option(SELF_TRAINING, "patience"),
    checkpoint_every: int = option(SELF_TRAINING, "checkpoint_every"),
    max_len: int = option(SELF_TRAINING, "max_len"),
    decoder: str = option(SELF_TRAINING, "decoder"),
    seed: int = option(SELF_TRAINING, "seed"),
    encoder_dropout: bool = option(SELF_TRAINING, "encoder_dropout"),
    device: str = DEVICE,
    precision: str = PRECISION,
    overwrite: bool = option(SELF_TRAINING, "overwrite"),
    restart: bool = option(SELF_TRAINING, "restart"),
):
    """Self-training without target labels: tag unlabelled text, keep confident sentences, train on them; repeat."""
    options = build(SelfTrainingOptions, {**locals(), "task": task.value, "from": source})
    from xling.train.self_training import self_train
    from xling.train.summary import self_training_summary

    Console().print(self_training_summary(self_train(options, console, TrainingBar(console))))
