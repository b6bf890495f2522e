"""`xling train-lang`: the thin command over `xling.train.language`."""

from __future__ import annotations

import typer
from rich.console import Console

from xling.cli.options import DEVICE, MODEL, PRESET_HELP, WORKSPACE, adapter_config
from xling.cli.progress import TrainingBar
from xling.train.language import LanguageAdapterOptions, train_language_adapter
from xling.train.loop import TrainConfig
from xling.train.mlm import MaskingConfig
from xling.train.summary import language_report_table

console = Console(stderr=True)


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
    steps: int = typer.Option(1000, help="Optimiser steps (ignored when --epochs is given)."),
    epochs: float = typer.Option(None, help="Train for this many passes over the corpus instead of --steps."),
    batch_size: int = typer.Option(8, help="Blocks per micro-batch."),
    grad_accum: int = typer.Option(1, help="Micro-batches per optimiser step."),
    lr: float = typer.Option(1e-4, help="Peak learning rate."),
    warmup: float = typer.Option(0.06, help="Warm-up: a fraction of the steps (below 1) or a number of steps."),
    seq_len: int = typer.Option(128, help="Tokens per training block."),
    mask_prob: float = typer.Option(0.15, help="Share of pieces to mask."),
    whole_word: bool = typer.Option(False, help="Mask whole words instead of single pieces."),
    vocab_from_corpus: bool = typer.Option(
        False, help="Restrict the training softmax to pieces seen in the corpus (faster)."
    ),
    held_out: float = typer.Option(0.02, help="Share of lines held out for perplexity (1-5%)."),
    seed: int = typer.Option(42),
    eval_every: int = typer.Option(100, help="Evaluate held-out perplexity every N steps."),
    checkpoint_every: int = typer.Option(100, help="Checkpoint every N steps."),
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
        training=TrainConfig(
            max_steps=None if epochs else steps,
            epochs=epochs or 1.0,
            batch_size=batch_size,
            grad_accum=grad_accum,
            learning_rate=lr,
            warmup=warmup,
            eval_every=eval_every,
            checkpoint_every=checkpoint_every,
            seed=seed,
            device=device,
        ),
        seq_len=seq_len,
        masking=MaskingConfig(probability=mask_prob, whole_word=whole_word),
        vocab_from_corpus=vocab_from_corpus,
        held_out=held_out,
        overwrite=overwrite,
        restart=restart,
    )
    report = train_language_adapter(options, console, TrainingBar(console))
    Console().print(language_report_table(report))
