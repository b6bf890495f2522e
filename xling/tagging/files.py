"""Tagging a file (or standard input) into one of the output formats: what `xling tag` and a recipe's tag
step run, from the same `TagOptions`."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from rich.console import Console

from xling.data.conll import MAX_RECORD_CHARS, read_lines, too_long, whole_lines
from xling.errors import XlingError
from xling.fileio import check_output_file
from xling.tagging.blocks import Launch, check_blocks, in_blocks, run_in_blocks, unit_name, units
from xling.tagging.options import TagOptions
from xling.tagging.output import write_results
from xling.tagging.spec import TaggerSpec

# Wraps a stream with a progress display, given how many units (lines, sentences) there will be, their name and
# how many units each item of the stream is.
Progress = Callable[[Iterable, int, str, Callable[[object], int]], Iterator]


def stdin_lines() -> Iterator[str]:
    """Standard input's lines, read through a reader of its own: the read-ahead thread that blocks in it must
    not hold the lock of `sys.stdin`, which Python takes at exit (a Ctrl+C then aborts the interpreter)."""
    try:
        stream = open(os.dup(sys.stdin.fileno()), "rb")
    except (AttributeError, OSError, ValueError):  # a replaced stdin without a descriptor (an embedding host)
        stream = contextlib.nullcontext(sys.stdin.buffer)
    with stream as lines:
        number = 0
        while raw := lines.readline(4 * MAX_RECORD_CHARS + 1):  # at most 4 bytes a character: bounded
            number += 1
            if len(raw) > 4 * MAX_RECORD_CHARS:
                raise XlingError(too_long("<stdin>", number))
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise XlingError(f"<stdin>:{number}: not UTF-8 text ({err.reason})") from None
            if len(text.rstrip("\r\n")) > MAX_RECORD_CHARS:
                raise XlingError(too_long("<stdin>", number))
            yield text.rstrip("\r\n")


def launched_tagger(options: TagOptions, launch: Launch):
    """The tagger of `options`; among several launched processes, each on its own GPU where there are some."""
    spec = options.tagger
    if launch.world > 1 and spec.device in ("auto", "cuda") and spec.runtime == "torch":
        import torch

        if torch.cuda.is_available():
            torch.cuda.set_device(launch.local_rank % torch.cuda.device_count())
    return load_tagger(spec)


def load_tagger(spec: TaggerSpec):
    """The tagger `spec` names; an exported ONNX folder tags without importing torch or Transformers."""
    from xling.tagging.onnx_tagger import exported_tagger

    if (exported := exported_tagger(spec)) is not None:
        return exported
    from xling.tagging.tagger import Tagger  # torch loads here, not for --help

    return Tagger.load(spec)


def tag_file(options: TagOptions, console: Console, progress: Progress | None = None) -> None:
    """Tag `options.input` and write the results as they come, to `options.output` or standard output (`pretty`
    on `console`); `progress` wraps the results of a file input (the command line's bar)."""
    path = None if options.input == "-" else Path(options.input)
    if path is not None and (not path.exists() or path.is_dir()):
        raise XlingError(f"no such file: {options.input}" + (" (a folder)" if path.is_dir() else ""))
    if path is None and (sys.stdin is None or sys.stdin.closed):  # `xling tag - <&-`, before the model loads
        raise XlingError("standard input is closed: pipe text into xling tag -, or give a file")
    regular = path is not None and path.is_file()  # a FIFO or /dev/stdin can be read once only
    output = Path(options.output) if options.output else None
    if output is not None:
        check_output_file(output)  # before the model loads, not after it has run
    launch = Launch.from_environment()
    check_blocks(options, launch)
    if in_blocks(options) and regular:
        run_in_blocks(lambda: launched_tagger(options, launch), options, launch, console, progress)
        return
    tagger = launched_tagger(options, launch)
    lines = enumerate(stdin_lines(), start=1) if path is None else whole_lines(read_lines(path), str(path))
    source = "<stdin>" if path is None else str(path)
    results = tagger.tag_numbered(lines, options.paragraphs, options.conll, options.jsonl, source)
    if progress is not None and regular:
        results = progress(results, sum(1 for _ in units(path, options.conll)), unit_name(options), lambda _: 1)
    write_results(results, options.output_format(), output, console)
