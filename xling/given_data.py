"""What a command's data argument may be: one rule for every command, from the command line and from Python.

Labelled data (`train`, `dev`, `data`, `labelled`, `check_data`) is a CoNLL file, a catalogue name
(`corpus:wikiann-qu/dev`), `wikiann:LANG` or `hf:DATASET[:CONFIG[:SPLIT]]`, and from Python also a
`datasets.Dataset` with tokens and tags or a list of sentences (each `(tokens, tags)`, `{"tokens", "tags"}` or a
`Sentence`). Text (`corpus`) is files, folders or globs, and from Python also a `Dataset` with a `text` (or
tokens) column or a list of tokenised sentences. Where several sources may be given (`train`, `labelled`,
`corpus`), a list of names is several sources and data in memory is one. The types below say so to the option
checks (`xling.options.build`) without importing `datasets`; the command line parses names.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class DatasetLike(Protocol):
    """A `datasets.Dataset`, or anything that has its `features`, `column_names` and length."""

    features: object
    column_names: list[str]

    def __len__(self) -> int: ...


# a name (path, corpus:, wikiann:, hf:), or labelled sentences in memory
LabelledData = str | DatasetLike | list
# the same, or several names
LabelledSources = str | list[str] | DatasetLike | list
# files, folders or globs, or text in memory
TextData = list[str] | DatasetLike | list


def in_memory(source) -> bool:
    """Data given as Python objects rather than named: a `datasets.Dataset`, or a list of sentences (a list of
    names is several sources)."""
    if isinstance(source, str):
        return False
    return isinstance(source, DatasetLike) or (
        isinstance(source, list | tuple) and not all(isinstance(s, str) for s in source)
    )


def sources_of(data) -> list:
    """The sources `data` is: one name or one object in memory, or each of several names."""
    return [data] if isinstance(data, str) or in_memory(data) else list(data)
