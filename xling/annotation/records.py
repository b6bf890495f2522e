"""The records of an annotation session, typed: what the page posts and what `answers.jsonl` holds. Each kind is
read one way, by its `from_record`, which refuses a malformed record in one line (an `AnswerError` with the HTTP
status the page gets); `to_record` is the line the log keeps.

    Answer        {item, spans: [{start, end, label}], judged: [start, end] | null}
    Skip          {item, skip: true}
    Undo          {undo: the id of the answer taken back, item}
    Adjudication  {adjudicate: the id of the answer that becomes gold, item}

Every record may carry the id its tab made for it (a retried request is taken once), the tab's id and the
person's name; an answer or skip also the item version its tab saw and whether it replaces the answer in force.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import ClassVar

from xling.annotation.batches import Item
from xling.annotation.options import MAX_ID
from xling.data.iob2 import entity_tags
from xling.data.schemes import UNJUDGED
from xling.errors import XlingError
from xling.fileio import read_jsonl
from xling.records import from_record
from xling.web import Refused


class AnswerError(Refused):
    """A request the session cannot take; `status` is the HTTP status the page gets, `details` what else it needs
    to offer a choice (a conflict's answers)."""


def new_id() -> str:
    return uuid.uuid4().hex


def now() -> float:
    return round(time.time(), 3)


@dataclass(kw_only=True)
class Sender:
    """Who sent a request: the id its tab made for it, the tab's id and the person's name, each optional."""

    id: str | None = None
    tab: str | None = None
    annotator: str | None = None

    def __post_init__(self):
        for key in ("id", "tab", "annotator"):
            value = getattr(self, key)
            if value is not None and not 0 < len(value) <= MAX_ID:
                raise AnswerError(f"{key} must be text of 1 to {MAX_ID} characters", 400)

    MARKERS: ClassVar[tuple[str, ...]] = ()  # keys that say which kind a record is, not read into a field

    @classmethod
    def read(cls, record, where: str):
        """The record checked one way: its keys and their types by xling's `from_record`, then its own rules
        (`__post_init__`); a request's keys that are none of this kind's are refused."""
        if not isinstance(record, dict):
            raise AnswerError(f"{where}: send a JSON object", 400)
        data = {key: value for key, value in record.items() if key not in ("line", *cls.MARKERS)}
        try:
            return from_record(cls, data, where)
        except AnswerError:
            raise
        except XlingError as err:
            raise AnswerError(str(err), 400) from None


@dataclass(kw_only=True)
class Record(Sender):
    """What every logged record carries: the item, its id, when it was written, and (replayed only) its line in
    the log."""

    item: str
    id: str = field(default_factory=new_id)
    time: float = field(default_factory=now)
    line: int = -1

    def to_record(self) -> dict:
        """The log's line: every field but the line number, and none left at None or its default."""
        kept = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "line" and value is not None and (f.name in ("item", "id", "time") or value != f.default):
                kept[f.name] = value
        return kept | dict.fromkeys(self.MARKERS, True)

    def public(self) -> dict:
        """The record as the page gets it back."""
        return {k: v for k, v in self.to_record().items() if k not in ("version", "replace", "replaces")}


@dataclass(kw_only=True)
class Given(Record):
    """An answer or a skip: the version of the item its tab saw (None: a script's, which replaces whatever is
    there), whether it replaces the answer in force, and as logged, its slot (a person's, on an item two people
    answer) and the answer it replaced."""

    version: int | None = None
    replace: bool = False
    slot: str = ""
    replaces: str | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.version is not None and self.version < 0:
            raise AnswerError("version must be a whole number from 0", 400)

    def check(self, item: Item, types: list[str]) -> None:
        """What only the sentence can tell: nothing, for a skip."""


@dataclass(kw_only=True)
class Answer(Given):
    spans: list[dict[str, int | str]]
    judged: list[int] | None = None

    def check(self, item: Item, types: list[str]) -> None:
        """Spans and the judged range within the sentence's words, of the session's types, not overlapping."""
        words = len(item.words)
        if self.judged is not None and not _is_range(self.judged, words):
            raise AnswerError(f"judged must be [start, end] with 0 <= start < end <= {words}", 400)
        taken = [False] * words
        for span in self.spans:
            if not _is_range([span.get("start"), span.get("end")], words):
                raise AnswerError(f"a span needs whole-number start < end within the sentence's {words} words", 400)
            if span.get("label") not in types:
                raise AnswerError(f"unknown type {span.get('label')!r}; the types are {', '.join(types)}")
            if any(taken[span["start"] : span["end"]]):
                raise AnswerError("spans overlap")
            taken[span["start"] : span["end"]] = [True] * (span["end"] - span["start"])
        self.spans = sorted(({k: s[k] for k in ("start", "end", "label")} for s in self.spans), key=_start)

    def tags(self, words: int) -> list[str]:
        """The answer's tags over a sentence of `words` words: its spans B-/I-, the other judged words O, the rest
        `?`."""
        start, end = self.judged or (0, words)
        tags = [UNJUDGED] * words
        tags[start:end] = ["O"] * (end - start)
        for span in self.spans:
            tags[span["start"] : span["end"]] = entity_tags(span["label"], span["end"] - span["start"])
        return tags

    def same_labels(self, other: Given) -> bool:
        return isinstance(other, Answer) and (self.spans, self.judged) == (other.spans, other.judged)


@dataclass(kw_only=True)
class Skip(Given):
    MARKERS: ClassVar[tuple[str, ...]] = ("skip",)


@dataclass(kw_only=True)
class Undo(Record):
    undo: str  # the id of the answer taken back


@dataclass(kw_only=True)
class Adjudication(Record):
    adjudicate: str


Event = Answer | Skip | Undo | Adjudication


def origin(record) -> dict:
    """The id, tab and name a request that is no record carries (an undo), checked as every record's are."""
    sent = Sender.read(
        {k: record.get(k) for k in ("id", "tab", "annotator")} if isinstance(record, dict) else {}, "request"
    )
    return {k: v for k, v in vars(sent).items() if v is not None}


def given_from_record(record, items: dict[str, Item], types: list[str]) -> Answer | Skip:
    """An answer or skip as the page posts it (or the log holds it), checked against the session's items."""
    kind = Skip if isinstance(record, dict) and record.get("skip") is True else Answer
    given = kind.read(
        {k: v for k, v in record.items() if k != "skip"} if isinstance(record, dict) else record, "answer"
    )
    if given.item not in items:
        raise AnswerError(f"no sentence {given.item!r} in this session", 404)
    given.check(items[given.item], types)
    return given


def _start(span: dict) -> int:
    return span["start"]


def event_from_record(record: dict, line: int, items: dict[str, Item], types: list[str]) -> Event:
    """A line of `answers.jsonl`, typed: each carries the id it was given."""
    where = f"line {line + 1}"
    if not isinstance(record, dict):
        raise AnswerError(f"{where}: send a JSON object", 400)
    if not isinstance(record.get("id"), str):
        raise AnswerError(f"{where}: a logged answer carries its id", 400)
    if "undo" in record:
        event = Undo.read(record, where)
    elif "adjudicate" in record:
        event = Adjudication.read(record, where)
    else:
        event = given_from_record(record, items, types)
    event.line = line
    return event


def read_events(path: Path, items: dict[str, Item], types: list[str]) -> list[Event]:
    """A session's log, typed; a damaged line stops the reading in one line naming the file and line."""
    events = []
    for line, record in enumerate(read_jsonl(path)):
        try:
            events.append(event_from_record(record, line, items, types))
        except XlingError as err:
            said = str(err).removeprefix(f"line {line + 1}: ")  # the file's name says the line
            raise XlingError(f"{path}:{line + 1}: {said}; move the file aside") from None
    return events


def _is_range(pair, length: int) -> bool:
    return (
        isinstance(pair, list)
        and len(pair) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
        and 0 <= pair[0] < pair[1] <= length
    )
