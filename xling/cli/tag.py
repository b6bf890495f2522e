"""`xling tag`: the thin command over `xling.tagging.files.tag_file`, its options from `TagOptions`."""

from __future__ import annotations

import sys

from rich.console import Console

from xling.cli.options import command
from xling.cli.progress import counted_bar
from xling.tagging.options import TagOptions


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
        (lambda results, total: counted_bar(results, total, "tagging", status)) if shown else None,
    )
