"""`xling train-lang`, `train-task`, `train-fusion` and `self-train`: thin commands over `xling.train`."""

from __future__ import annotations

from enum import Enum

import typer
from rich.console import Console

from xling.adapters import FusionConfig
from xling.cli.options import DECODER, DEVICE, MODEL, PRESET_HELP, WORKSPACE, Task, adapter_config, comma_list
from xling.cli.progress import TrainingBar
from xling.data.labels import parse_label_map
from xling.train.fusion import FusionOptions, train_fusion
from xling.train.language import LanguageAdapterOptions, train_language_adapter
from xling.train.mlm import MaskingConfig
from xling.train.self_training import SelfTrainingOptions, self_train
from xling.train.summary import language_report_table, selection_summary, self_training_summary
from xling.train.task import DEFAULT_LEARNING_RATES, TaskAdapterOptions, train_task_adapter

console = Console(stderr=True)
# The defaults of each command come from its options dataclass, never from here.
LANG = LanguageAdapterOptions(lang="qu", corpus=[])
TASK = TaskAdapterOptions(lang="en", train="", dev="")
FUSION = FusionOptions(lang="qu", adapters=[], train="", dev="")
SELF_TRAINING = SelfTrainingOptions(lang="qu", corpus=[], dev="")


class Method(str, Enum):
    adapter = "adapter"
    full = "full"
    head = "head"


def train_lang(
    lang: str = typer.Argument(..., help="Language code, e.g. qu, es, en: the adapter's name."),
    corpus: list[str] = typer.Argument(..., help="Text files, folders or globs (CoNLL files count as text)."),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    preset: str = typer.Option("madx-lang", help=PRESET_HELP),
    reduction_factor: float = typer.Option(None, help="Override the preset's reduction factor."),
    non_linearity: str = typer.Option(None, help="Override the preset's non-linearity (relu, gelu, swish, tanh)."),
    leave_out: str = typer.Option(None, help="Comma-separated layer indices without adapters."),
    share_every: int = typer.Option(None, help="Share one adapter across this many consecutive layers."),
    steps: int = typer.Option(
        None, help=f"Optimiser steps (default: {LANG.training.max_steps}, unless --epochs is given)."
    ),
    epochs: float = typer.Option(None, help="Train for this many passes over the corpus instead of --steps."),
    batch_size: int = typer.Option(LANG.training.batch_size, help="Blocks per micro-batch."),
    grad_accum: int = typer.Option(LANG.training.grad_accum, help="Micro-batches per optimiser step."),
    lr: float = typer.Option(LANG.training.learning_rate, help="Peak learning rate."),
    warmup: float = typer.Option(
        LANG.training.warmup, help="Warm-up: a fraction of the steps (below 1) or a number of steps."
    ),
    seq_len: int = typer.Option(LANG.seq_len, help="Tokens per training block."),
    mask_prob: float = typer.Option(LANG.masking.probability, help="Share of pieces to mask."),
    whole_word: bool = typer.Option(LANG.masking.whole_word, help="Mask whole words instead of single pieces."),
    vocab_from_corpus: bool = typer.Option(
        LANG.vocab_from_corpus, help="Restrict the training softmax to pieces seen in the corpus (faster)."
    ),
    held_out: float = typer.Option(LANG.held_out, help="Share of lines held out for perplexity (1-5%)."),
    seed: int = typer.Option(LANG.training.seed),
    eval_every: int = typer.Option(LANG.training.eval_every, help="Evaluate held-out perplexity every N steps."),
    checkpoint_every: int = typer.Option(LANG.training.checkpoint_every, help="Checkpoint every N steps."),
    device: str = DEVICE,
    overwrite: bool = typer.Option(False, help="Replace an existing adapter of the same name."),
    restart: bool = typer.Option(False, help="Discard an interrupted run instead of resuming it."),
):
    """Train a language adapter by masked-language modelling on unlabelled text."""
    options = LanguageAdapterOptions(
        lang=lang,
        corpus=corpus,
        model=model,
        workspace=workspace,
        adapter=adapter_config(preset, reduction_factor, non_linearity, leave_out, share_every),
        training=LANG.training.with_options(locals()),
        seq_len=seq_len,
        masking=MaskingConfig(probability=mask_prob, whole_word=whole_word),
        vocab_from_corpus=vocab_from_corpus,
        held_out=held_out,
        overwrite=overwrite,
        restart=restart,
    )
    report = train_language_adapter(options, console, TrainingBar(console))
    Console().print(language_report_table(report))


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
    epochs: float = typer.Option(TASK.training.epochs, help="Passes over the training data."),
    steps: int = typer.Option(None, help="Optimiser steps instead of --epochs."),
    batch_size: int = typer.Option(TASK.training.batch_size),
    grad_accum: int = typer.Option(TASK.training.grad_accum),
    lr: float = typer.Option(None, help="Learning rate (default: 5e-4 adapter, 5e-5 full, 1e-2 head)."),
    warmup: float = typer.Option(TASK.training.warmup),
    eval_every: int = typer.Option(None, help="Evaluate dev F1 every N steps (default: once per epoch)."),
    patience: int = typer.Option(
        TASK.training.patience, help="Stop after this many evaluations without a better dev F1."
    ),
    checkpoint_every: int = typer.Option(TASK.training.checkpoint_every),
    max_len: int = typer.Option(TASK.max_len, help="Longest window in sub-tokens; longer sentences are windowed."),
    train_limit: int = typer.Option(None, help="Train on the first N sentences only."),
    dev_limit: int = typer.Option(None, help="Select on the first N dev sentences only."),
    decoder: str = DECODER,
    seed: int = typer.Option(TASK.training.seed),
    device: str = DEVICE,
    overwrite: bool = typer.Option(False, help="Replace an existing task adapter of the same name."),
    restart: bool = typer.Option(False, help="Discard an interrupted run instead of resuming it."),
):
    """Train a NER task adapter (and its head) over the frozen language adapter, or a baseline."""
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
        training=TASK.training.with_options({**locals(), "lr": lr or DEFAULT_LEARNING_RATES[method.value]}),
        drop_labels=comma_list(drop_labels),
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
    temperature: float = typer.Option(FUSION.fusion.temperature, help="Softmax temperature over the fused adapters."),
    value_penalty: float = typer.Option(
        FUSION.fusion.value_penalty, help="Weight of the L2 pull of the value matrices towards identity."
    ),
    drop_labels: str = typer.Option(None, help="Entity types to turn into O, e.g. MISC."),
    label_map: str = typer.Option(None, help="Rename entity types, e.g. PERSON=PER."),
    epochs: float = typer.Option(FUSION.training.epochs),
    steps: int = typer.Option(None, help="Optimiser steps instead of --epochs."),
    batch_size: int = typer.Option(FUSION.training.batch_size),
    grad_accum: int = typer.Option(FUSION.training.grad_accum),
    lr: float = typer.Option(FUSION.training.learning_rate, help="Learning rate (AdapterFusion paper: 5e-5)."),
    warmup: float = typer.Option(FUSION.training.warmup),
    eval_every: int = typer.Option(None, help="Evaluate dev F1 every N steps (default: once per epoch)."),
    patience: int = typer.Option(FUSION.training.patience),
    checkpoint_every: int = typer.Option(FUSION.training.checkpoint_every),
    max_len: int = typer.Option(FUSION.max_len, help="Longest window in sub-tokens; longer sentences are windowed."),
    decoder: str = DECODER,
    seed: int = typer.Option(FUSION.training.seed),
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
            training=FUSION.training.with_options(locals()),
            drop_labels=comma_list(drop_labels),
            label_map=parse_label_map(label_map),
            max_len=max_len,
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
        SELF_TRAINING.threshold, help="Keep a sentence when its tag probabilities (see --confidence-of) reach this."
    ),
    confidence_of: str = typer.Option(
        SELF_TRAINING.confidence_of, help="Whose probabilities must reach --threshold: every word's, or the entities'."
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
            confidence_of=confidence_of,
            max_per_type=max_per_type or None,
            max_sentences=max_sentences or None,
            training=SELF_TRAINING.training.with_options(locals()),
            decoder=decoder,
            overwrite=overwrite,
            restart=restart,
        ),
        console,
        TrainingBar(console),
    )
    Console().print(self_training_summary(report))
