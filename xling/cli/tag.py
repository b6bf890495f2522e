"""`xling tag`: the thin command over `xling.tagging`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from enum import Enum
from pathlib import Path

import typer
from rich.console import Console

from xling.cli.options import DECODER, DEVICE, INFERENCE_PRECISION, MODEL, WORKSPACE
from xling.cli.progress import counted_bar
from xling.data.conll import read_lines, read_tokens
from xling.data.text import MAX_LINE_CHARS, pieces
from xling.errors import XlingError
from xling.fileio import check_output_file
from xling.tagging.output import FORMATS, write_results
from xling.workspace import LANG_ADAPTER_HELP

Format = Enum("Format", {name: name for name in FORMATS}, type=str)


def _stdin_lines() -> Iterator[str]:
    for number, raw in enumerate(sys.stdin.buffer, start=1):
        try:
            yield raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as err:
            raise XlingError(f"<stdin>:{number}: not UTF-8 text ({err.reason})") from None


def tag(
    source: str = typer.Argument(
        ...,
        help=f"Text file to tag, or - for standard input (a line over {MAX_LINE_CHARS:,} characters is tagged in "
        "pieces cut at spaces, one result each).",
    ),
    lang: str = typer.Option(
        ..., "--lang", help="Language of the text: its language adapter goes under the task adapter."
    ),
    task: str = typer.Option("ner", help="The task."),
    adapter: str = typer.Option(
        None,
        "--task-adapter",
        "-t",
        help="Task adapter: a name, a directory or hf:ORG/NAME (default: TASK-LANG if trained, else TASK-en).",
    ),
    fusion: str = typer.Option(None, help="A trained fusion to use instead of a single task adapter."),
    output_format: Format = typer.Option(Format.pretty, "--format", "-f", help="pretty, jsonl, conll or html."),
    output: str = typer.Option(
        None, "--output", "-o", help="Write here instead of standard output (written whole, or not at all)."
    ),
    paragraphs: bool = typer.Option(False, help="Lines are running text: split them into sentences first."),
    conll: bool = typer.Option(
        False, "--conll", help="Input is pre-tokenised: a token per line, blank lines between sentences."
    ),
    no_lang_adapter: bool = typer.Option(False, "--no-lang-adapter", help="Tag without a language adapter."),
    lang_adapter: str = typer.Option(None, "--lang-adapter", help=LANG_ADAPTER_HELP),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    batch_size: int = typer.Option(32),
    decoder: str = DECODER,
    device: str = DEVICE,
    precision: str = INFERENCE_PRECISION,
):
    """Tag entities in text: one sentence per line, or running text with --paragraphs.

    Results are written as their batch finishes (html, which needs them all, at the end); with a file as
    input and the output not on the terminal, a progress bar shows on standard error."""
    path = None if source == "-" else Path(source)
    if path is not None and not path.is_file():
        raise XlingError(f"no such file: {source}")
    if output is not None:
        check_output_file(Path(output))  # before the model loads, not after it has run
    from xling.tagging.tagger import Tagger  # torch loads here, not for --help

    tagger = Tagger.load(
        lang=lang,
        task=task,
        adapter=adapter,
        fusion=fusion,
        model=model,
        workspace=workspace,
        use_lang_adapter=not no_lang_adapter,
        lang_adapter=lang_adapter,
        device=device,
        batch_size=batch_size,
        decoder=decoder,
        precision=precision,
    )
    results = tagger.tag_lines(
        _stdin_lines() if path is None else (line for _, line in read_lines(path)), paragraphs, conll
    )
    status = Console(stderr=True)
    if path is not None and status.is_terminal and (output is not None or not sys.stdout.isatty()):
        lines = (line for _, line in read_lines(path))
        total = sum(1 for _ in read_tokens(read_lines(path))) if conll else sum(1 for _ in pieces(lines))
        results = counted_bar(results, total, "tagging", status)
    console = Console(highlight=False, soft_wrap=True, stderr=output is not None)
    write_results(results, output_format.value, Path(output) if output else None, console)
