"""The batch files of an annotation session, written by `xling select` (and by each retraining round) and read
by the session:

    <session>/session.json         the options the session was started with (`SelectOptions`)
    <session>/batches/NNNN.jsonl   a header line (strategy, adapter, entity types, batch number), then one
                                   `Item` per line, best first
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from xling.annotation.options import SelectOptions
from xling.errors import XlingError
from xling.fileio import read_jsonl, write_json_atomic, write_text_atomic
from xling.records import from_record, read_record, set_fields

BATCHES = "batches"
SESSION_FILE = "session.json"


@dataclass
class BatchHeader:
    """A batch file's first line: how its items were chosen (strategy, mode, the adapter that tagged them), the
    entity types to label, when, and the corpus files it read (a later batch reads the same ones)."""

    strategy: str
    mode: str
    adapter: str
    types: list[str]
    created: float
    corpus: list[str] | None = None
    batch: int = 0  # its number: set when it is written

    def to_record(self) -> dict:
        return set_fields(self)


@dataclass
class Item:
    """One sentence to label: its words (character offsets into `text`), the model's tags and probabilities,
    and in spans mode the span to ask about."""

    id: str
    text: str
    words: list[list[int]]
    tags: list[str]
    probabilities: list[float]
    focus: dict | None
    score: float
    batch: int = 0  # the number of its batch: set from the header when read

    def to_line(self) -> dict:
        """The item as its batch file holds it (its batch is the header's)."""
        return {key: value for key, value in asdict(self).items() if key != "batch"}

    def tokens(self) -> list[str]:
        return [self.text[start:end] for start, end in self.words]

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Batches:
    """Every batch of a session: the headers in order, every item by id, and the newest batch's ids, best first."""

    headers: list[BatchHeader]
    items: dict[str, Item]
    newest: list[str]

    @property
    def types(self) -> list[str]:
        return sorted({t for header in self.headers for t in header.types})


def read_batches(directory: Path) -> Batches:
    """Every batch file, checked: a damaged one stops the reading in one line naming the file and line."""
    headers, items, newest = [], {}, []
    for path in sorted((directory / BATCHES).glob("*.jsonl")):
        first, *lines = read_jsonl(path) or [None]
        if not isinstance(first, dict) or "batch" not in first:
            raise XlingError(f"{path}:1: not a batch header; move the file aside")
        header = from_record(BatchHeader, first, f"{path}:1")
        headers.append(header)
        read = [
            from_record(Item, line | {"batch": header.batch} if isinstance(line, dict) else line, f"{path}:{n}")
            for n, line in enumerate(lines, start=2)
        ]
        items |= {item.id: item for item in read}
        newest = [item.id for item in read]
    return Batches(headers, items, newest)


def write_batch(directory: Path, header: BatchHeader, items: list[Item]) -> Path:
    """The next batch file, written whole or not at all, the header numbered."""
    number = len(list((directory / BATCHES).glob("*.jsonl"))) + 1
    path = directory / BATCHES / f"{number:04d}.jsonl"
    lines = [replace(header, batch=number).to_record(), *(item.to_line() for item in items)]
    write_text_atomic(path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


def start_session(directory: Path, options: SelectOptions) -> None:
    """Record the options a new session starts with; a later batch must agree on the language and corpus."""
    file = directory / SESSION_FILE
    if file.is_file():
        started = read_record(file, SelectOptions)
        before, now = _fixed(started), _fixed(options)
        for key in before:
            if before[key] != now[key]:
                raise XlingError(
                    f"session {directory.name!r} was started with {key} {before[key]!r}, not {now[key]!r}; "
                    "give another --session"
                )
        return
    (directory / BATCHES).mkdir(parents=True, exist_ok=True)
    write_json_atomic(file, asdict(options))


def _fixed(options: SelectOptions) -> dict:
    """What every batch of a session shares."""
    return {"lang": options.tagger.lang, "corpus": options.corpus, "mode": options.mode}
