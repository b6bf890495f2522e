"""`xling tag`: the thin command over `xling.tagging`."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path

import typer
from rich.console import Console

from xling.cli.options import DECODER, DEVICE, MODEL, PRECISION, WORKSPACE
from xling.data.conll import read_lines
from xling.errors import XlingError
from xling.fileio import check_output_file
from xling.tagging.output import FORMATS, write_results
from xling.tagging.tagger import Tagger

Format = Enum("Format", {name: name for name in FORMATS}, type=str)


def _input_lines(source: str) -> list[str]:
    if source == "-":
        data = sys.stdin.buffer.read()
        try:
            return data.decode("utf-8").splitlines()
        except UnicodeDecodeError as err:
            line = data[: err.start].count(b"\n") + 1
            raise XlingError(f"<stdin>:{line}: not UTF-8 text ({err.reason})") from None
    path = Path(source)
    if not path.is_file():
        raise XlingError(f"no such file: {source}")
    return [line for _, line in read_lines(path)]


def tag(
    source: str = typer.Argument(..., help="Text file to tag, or - for standard input."),
    lang: str = typer.Option(
        ..., "--lang", help="Language of the text: its language adapter goes under the task adapter."
    ),
    task: str = typer.Option("ner", help="The task."),
    adapter: str = typer.Option(
        None, "--task-adapter", "-t", help="Task adapter (default: TASK-LANG if trained, else TASK-en)."
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
    model: str = MODEL,
    workspace: str = WORKSPACE,
    batch_size: int = typer.Option(32),
    decoder: str = DECODER,
    device: str = DEVICE,
    precision: str = PRECISION,
):
    """Tag entities in text: one sentence per line, or running text with --paragraphs."""
    lines = _input_lines(source)
    if output is not None:
        check_output_file(Path(output))  # before the model loads, not after it has run
    tagger = Tagger.load(
        lang=lang,
        task=task,
        adapter=adapter,
        fusion=fusion,
        model=model,
        workspace=workspace,
        use_lang_adapter=not no_lang_adapter,
        device=device,
        batch_size=batch_size,
        decoder=decoder,
        precision=precision,
    )
    results = tagger.tag_lines(lines, paragraphs, conll)
    console = Console(highlight=False, soft_wrap=True, stderr=output is not None)
    write_results(results, output_format.value, Path(output) if output else None, console)
