"""`xling tag` and `xling serve`: thin commands over `xling.tagging.files.tag_file` and
`xling.tagging.serving.serve`, their options from `TagOptions` and `ServeOptions`."""

from __future__ import annotations

import sys

from rich.console import Console

from xling.cli.options import command
from xling.cli.progress import counted_bar
from xling.lazy import require
from xling.tagging.options import ServeOptions, TagOptions


@command(TagOptions)
def tag(options: TagOptions):
    """Tag entities in text: one sentence per line, or running text with --paragraphs.

    Results are written as their batch finishes (html, which needs them all, at the end); with a file as
    input and the output not on the terminal, a progress bar shows on standard error."""
    from xling.tagging.files import tag_file

    status = Console(stderr=True)
    shown = status.is_terminal and (options.output is not None or not sys.stdout.isatty())
    tag_file(
        options,
        Console(highlight=False, soft_wrap=True, stderr=options.output is not None),
        (lambda items, total, unit, size: counted_bar(items, total, "tagging", status, unit, size)) if shown else None,
    )


@command(ServeOptions)
def serve_command(options: ServeOptions):
    """Tag text over HTTP: POST {"inputs": TEXT or [TEXT, ...]} to the address it prints, get entities as
    Transformers' token-classification pipeline gives them. Concurrent requests are tagged together; only this
    machine can connect unless --host and --token say otherwise."""
    require("flask", "serve", "xling serve")
    from xling.tagging.serving import serve

    status = Console(stderr=True)
    serve(options, lambda address: status.print(f"serving at {address} (Ctrl+C stops)"))  # until Ctrl+C
    status.print("stopped")
