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

from xling.annotation.batches import Item
from xling.data.conll import UNJUDGED
from xling.data.iob2 import entity_tags
from xling.errors import XlingError

MAX_ID = 64  # characters of an id or a name


class AnswerError(XlingError):
    """A request the session cannot take; `status` is the HTTP status the page gets, `details` what else it needs
    to offer a choice (a conflict's answers)."""

    def __init__(self, message: str, status: int = 422, details: dict | None = None):
        super().__init__(message)
        self.status, self.details = status, details or {}


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass
class Record:
    """What every record carries: its id, the tab and person it came from, when it was written, and (replayed
    only) its line in the log."""

    item: str
    id: str = field(default_factory=new_id)
    tab: str | None = None
    annotator: str | None = None
    time: float = field(default_factory=lambda: round(time.time(), 3))
    line: int = -1

    def to_record(self) -> dict:
        """The log's line: every field but the line number, and none left at None or its default."""
        kept = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "line" and value is not None and (f.name in ("item", "id", "time") or value != f.default):
                kept[f.name] = value
        return kept | self.marker()

    def marker(self) -> dict:
        return {}

    def public(self) -> dict:
        """The record as the page gets it back."""
        return {k: v for k, v in self.to_record().items() if k not in ("version", "replace", "replaces")}


@dataclass
class Given(Record):
    """An answer or a skip: the version of the item its tab saw (None: a script's, which replaces whatever is
    there), whether it replaces the answer in force, and as logged, its slot (a person's, on an item two people
    answer) and the answer it replaced."""

    version: int | None = None
    replace: bool = False
    slot: str = ""
    replaces: str | None = None


@dataclass
class Answer(Given):
    spans: list[dict] = field(default_factory=list)
    judged: list[int] | None = None

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


@dataclass
class Skip(Given):
    def marker(self) -> dict:
        return {"skip": True}


@dataclass
class Undo(Record):
    undo: str | bool = ""  # True: a log written before ids (the last answer in force, anyone's)


@dataclass
class Adjudication(Record):
    adjudicate: str = ""


Event = Answer | Skip | Undo | Adjudication


def origin(record: dict) -> dict:
    """The id, tab and name a record carries, each checked: text of 1 to MAX_ID characters."""
    given = {}
    for key in ("id", "tab", "annotator"):
        if record.get(key) is not None:
            if not isinstance(record[key], str) or not 0 < len(record[key]) <= MAX_ID:
                raise AnswerError(f"{key} must be text of 1 to {MAX_ID} characters", 400)
            given[key] = record[key]
    return given


def given_from_record(record, items: dict[str, Item], types: list[str]) -> Answer | Skip:
    """An answer or skip as the page posts it (or the log holds it), checked against the session's items."""
    if not isinstance(record, dict) or not isinstance(record.get("item"), str):
        raise AnswerError("an answer is a JSON object with the item's id", 400)
    item = items.get(record["item"])
    if item is None:
        raise AnswerError(f"no sentence {record['item']!r} in this session", 404)
    common = {"item": item.id, **origin(record), **_logged(record)}
    version = record.get("version")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool) or version < 0):
        raise AnswerError("version must be a whole number from 0", 400)
    if not isinstance(record.get("replace", False), bool):
        raise AnswerError("replace must be true or false", 400)
    common |= {"version": version, "replace": record.get("replace", False)}
    if record.get("skip") is True:
        return Skip(**common)
    return Answer(**common, **_labels(record, len(item.words), types))


def _labels(record: dict, words: int, types: list[str]) -> dict:
    spans, judged = record.get("spans"), record.get("judged")
    if not isinstance(spans, list):
        raise AnswerError("spans must be a list of {start, end, label}", 400)
    if judged is not None and not _is_range(judged, words):
        raise AnswerError(f"judged must be [start, end] with 0 <= start < end <= {words}", 400)
    taken = [False] * words
    for span in spans:
        if not isinstance(span, dict) or not _is_range([span.get("start"), span.get("end")], words):
            raise AnswerError(f"a span needs whole-number start < end within the sentence's {words} words", 400)
        if span.get("label") not in types:
            raise AnswerError(f"unknown type {span.get('label')!r}; the types are {', '.join(types)}")
        if any(taken[span["start"] : span["end"]]):
            raise AnswerError("spans overlap")
        taken[span["start"] : span["end"]] = [True] * (span["end"] - span["start"])
    clean = sorted(({"start": s["start"], "end": s["end"], "label": s["label"]} for s in spans), key=_start)
    return {"spans": clean, "judged": judged}


def _start(span: dict) -> int:
    return span["start"]


def _logged(record: dict) -> dict:
    """What only the log's lines hold (the server sets them): when, the slot and the answer replaced."""
    kept = {}
    if isinstance(record.get("time"), int | float) and not isinstance(record.get("time"), bool):
        kept["time"] = record["time"]
    for key in ("slot", "replaces"):
        if isinstance(record.get(key), str):
            kept[key] = record[key]
    return kept


def event_from_record(record: dict, line: int, items: dict[str, Item], types: list[str]) -> Event:
    """A line of `answers.jsonl`, typed; a line written before answers had ids is named by its place."""
    record = {"id": f"line-{line + 1}"} | record
    if "undo" in record:
        undone = record["undo"]
        if not (undone is True or isinstance(undone, str)):
            raise AnswerError(f"line {line + 1}: undo names an answer's id", 400)
        return Undo(item=str(record.get("item", "")), undo=undone, line=line, **origin(record), **_logged(record))
    if "adjudicate" in record:
        if not isinstance(record["adjudicate"], str) or not isinstance(record.get("item"), str):
            raise AnswerError(f"line {line + 1}: an adjudication names an item and an answer's id", 400)
        chosen = Adjudication(item=record["item"], adjudicate=record["adjudicate"], **origin(record))
        chosen.line, chosen.time = line, record.get("time", chosen.time)
        return chosen
    answer = given_from_record(record, items, types)
    answer.line = line
    return answer


def _is_range(pair, length: int) -> bool:
    return (
        isinstance(pair, list)
        and len(pair) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
        and 0 <= pair[0] < pair[1] <= length
    )
