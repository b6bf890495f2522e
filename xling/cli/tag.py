"""`xling tag`: the thin command over `xling.tagging.files.tag_file`, its options from `TagOptions`."""

from __future__ import annotations

import sys
from enum import Enum

from rich.console import Console

from xling.cli.options import MODEL, WORKSPACE, argument, option
from xling.cli.progress import counted_bar
from xling.options import build, defaults
from xling.tagging.options import FORMATS, TagOptions

TAG = defaults(TagOptions)
Format = Enum("Format", {name: name for name in FORMATS}, type=str)


def tag(
    input: str = argument(TAG, "input"),
    lang: str = option(TAG, "lang", "--lang"),
    task: str = option(TAG, "task"),
    task_adapter: str = option(TAG, "task_adapter", "--task-adapter", "-t"),
    fusion: str = option(TAG, "fusion"),
    format: Format = option(TAG, "format", "--format", "-f"),
    output: str = option(TAG, "output", "--output", "-o"),
    paragraphs: bool = option(TAG, "paragraphs"),
    conll: bool = option(TAG, "conll", "--conll"),
    no_lang_adapter: bool = option(TAG, "no_lang_adapter"),
    lang_adapter: str = option(TAG, "lang_adapter", "--lang-adapter"),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    batch_size: int = option(TAG, "batch_size"),
    decoder: str = option(TAG, "decoder"),
    device: str = option(TAG, "device"),
    precision: str = option(TAG, "precision"),
    runtime: str = option(TAG, "runtime", "--runtime"),
):
    """Tag entities in text: one sentence per line, or running text with --paragraphs.

    Results are written as their batch finishes (html, which needs them all, at the end); with a file as
    input and the output not on the terminal, a progress bar shows on standard error."""
    from xling.tagging.files import tag_file

    options = build(TagOptions, {**locals(), "format": format.value if format else None})
    status = Console(stderr=True)
    shown = status.is_terminal and (output is not None or not sys.stdout.isatty())
    tag_file(
        options,
        Console(highlight=False, soft_wrap=True, stderr=output is not None),
        (lambda results, total: counted_bar(results, total, "tagging", status)) if shown else None,
    )
