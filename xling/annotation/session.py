"""An annotation session: the batches `xling select` wrote, and every answer a person gave, in one folder.

    <workspace>/<model>/annotation/<session>/
        session.json      the options the session was started with (`SelectOptions`)
        batches/NNNN.jsonl  a header line (strategy, adapter, entity types), then one item per line
        answers.jsonl     append-only: every answer, skip and undo, each synced to disk before it is confirmed
        gold.conll        the answers as CoNLL (`?` for words nobody judged), rewritten after each answer
        rounds.jsonl      one line per background retraining: sentences, words, dev F1

Nothing is ever rewritten in place but the exports, so a killed server, a closed tab or two tabs at once lose
no answer: the state is the replay of `answers.jsonl`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from xling.annotation.options import SelectOptions
from xling.data.conll import UNJUDGED, Sentence, conll_text
from xling.errors import XlingError
from xling.fileio import read_json, write_json_atomic, write_text_atomic
from xling.options import from_record
from xling.workspace import Workspace, check_name

SESSION_FILE = "session.json"
ANSWERS_FILE = "answers.jsonl"
GOLD_FILE = "gold.conll"
ROUNDS_FILE = "rounds.jsonl"


class AnswerError(XlingError):
    """An answer the session cannot take; `status` is the HTTP status the page gets."""

    def __init__(self, message: str, status: int = 422):
        super().__init__(message)
        self.status = status


def session_dir(workspace: Workspace, name: str) -> Path:
    return workspace.model_dir / "annotation" / check_name(name)


def read_jsonl(path: Path) -> list[dict]:
    """The records of a JSON-lines file's complete lines: a last line without its newline (a write cut short by
    a kill, or one under way in another process) is left out, never cut off: only the file's writer does that."""
    if not path.is_file():
        return []
    data = path.read_bytes()
    try:
        text = data[: data.rfind(b"\n") + 1].decode("utf-8")
    except UnicodeDecodeError:
        raise XlingError(f"{path}: not UTF-8 text; move the file aside to start over") from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            records.append(json.loads(line))
        except (json.JSONDecodeError, RecursionError):
            raise XlingError(f"{path}:{number}: damaged line; move the file aside to start over") from None
    return records


def append_jsonl(path: Path, record: dict) -> None:
    """One line added and synced to disk before this returns. The file's one writer calls it: a line an earlier
    writer left cut short by a kill is cut off first, so that the new line stands on its own."""
    with open(path, "a+b") as f:
        end = f.seek(0, os.SEEK_END)
        if end and f.seek(end - 1) is not None and f.read(1) != b"\n":
            f.seek(0)
            data = f.read()
            f.truncate(data.rfind(b"\n") + 1)
        f.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


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
    batch: int

    def tokens(self) -> list[str]:
        return [self.text[start:end] for start, end in self.words]

    def to_dict(self) -> dict:
        return asdict(self)


class Session:
    def __init__(self, directory: Path):
        self.directory = directory
        self.lock = threading.Lock()
        file = directory / SESSION_FILE
        if not file.is_file():
            raise XlingError(f"no annotation session in {directory}; start one with: xling select CORPUS --lang LANG")
        self.options = from_record(SelectOptions, read_json(file), str(file))
        self.headers: list[dict] = []
        self.items: dict[str, Item] = {}
        self.load_batches()
        self.events = read_jsonl(directory / ANSWERS_FILE)
        self.answers: dict[str, dict] = {}
        self._replay()

    def load_batches(self) -> None:
        """Read the batch files (again: a retraining round adds one)."""
        headers, items = [], {}
        for path in sorted((self.directory / "batches").glob("*.jsonl")):
            header, *lines = read_jsonl(path)
            headers.append(header)
            items |= {line["id"]: Item(**line, batch=header["batch"]) for line in lines}
        with self.lock:
            self.headers, self.items = headers, items

    @classmethod
    def open(cls, workspace: Workspace, name: str) -> Session:
        return cls(session_dir(workspace, name))

    @property
    def types(self) -> list[str]:
        return sorted({t for header in self.headers for t in header["types"]})

    def _replay(self) -> None:
        """The answer in force for each item: the last one given, unless undone."""
        stack: list[dict] = []
        for event in self.events:
            if event.get("undo"):
                if stack:
                    stack.pop()
            else:
                stack.append(event)
        self.answers = {event["item"]: event for event in stack}
        self.stack = stack

    def queue(self) -> list[Item]:
        """Items nobody has answered or skipped, batch by batch, best first within a batch."""
        return [item for item in self.items.values() if item.id not in self.answers]

    def check(self, record: dict) -> dict:
        """An answer as the page posts it, checked: {item, spans: [{start, end, label}], judged: [start, end]
        or null (the whole sentence)} or {item, skip: true}."""
        if not isinstance(record, dict) or not isinstance(record.get("item"), str):
            raise AnswerError("an answer is a JSON object with the item's id", 400)
        item = self.items.get(record["item"])
        if item is None:
            raise AnswerError(f"no sentence {record['item']!r} in this session", 404)
        if record.get("skip") is True:
            return {"item": item.id, "skip": True}
        spans, judged = record.get("spans"), record.get("judged")
        if not isinstance(spans, list):
            raise AnswerError("spans must be a list of {start, end, label}", 400)
        words = len(item.words)
        if judged is not None and not _is_range(judged, words):
            raise AnswerError(f"judged must be [start, end] with 0 <= start < end <= {words}", 400)
        taken = [False] * words
        for span in spans:
            if not isinstance(span, dict) or not _is_range([span.get("start"), span.get("end")], words):
                raise AnswerError(f"a span needs whole-number start < end within the sentence's {words} words", 400)
            if span.get("label") not in self.types:
                raise AnswerError(f"unknown type {span.get('label')!r}; the types are {', '.join(self.types)}")
            if any(taken[span["start"] : span["end"]]):
                raise AnswerError("spans overlap")
            taken[span["start"] : span["end"]] = [True] * (span["end"] - span["start"])
        clean = [{"start": s["start"], "end": s["end"], "label": s["label"]} for s in spans]
        return {"item": item.id, "spans": clean, "judged": judged}

    def record(self, answer: dict) -> dict:
        """Check an answer (or skip), write it to disk, then take it; returns the progress."""
        answer = self.check(answer) | {"time": round(time.time(), 3)}
        with self.lock:
            append_jsonl(self.directory / ANSWERS_FILE, answer)
            self.events.append(answer)
            self._replay()
            self.export()
        return self.progress()

    def undo(self) -> str | None:
        """Take back the last answer or skip (whoever gave it); returns its item, None if there is none."""
        with self.lock:
            if not self.stack:
                return None
            item = self.stack[-1]["item"]
            event = {"undo": True, "item": item, "time": round(time.time(), 3)}
            append_jsonl(self.directory / ANSWERS_FILE, event)
            self.events.append(event)
            self._replay()
            self.export()
        return item

    def tags(self, answer: dict) -> list[str]:
        """An answer's tags: its spans B-/I-, the other judged words O, the rest `?`."""
        item = self.items[answer["item"]]
        start, end = answer["judged"] or (0, len(item.words))
        tags = [UNJUDGED] * len(item.words)
        tags[start:end] = ["O"] * (end - start)
        for span in answer["spans"]:
            tags[span["start"] : span["end"]] = [f"B-{span['label']}"] + [f"I-{span['label']}"] * (
                span["end"] - span["start"] - 1
            )
        return tags

    def gold(self) -> list[Sentence]:
        """The answered sentences (skips left out), in the order they were answered."""
        return [
            Sentence(self.items[a["item"]].tokens(), self.tags(a)) for a in self.answers.values() if not a.get("skip")
        ]

    def export(self, path: Path | None = None) -> Path:
        path = path or self.directory / GOLD_FILE
        write_text_atomic(path, conll_text(self.gold()))
        return path

    def progress(self) -> dict:
        gold = self.gold()
        per_type: dict[str, int] = {}
        for sentence in gold:
            for tag in sentence.tags:
                if tag.startswith("B-"):
                    per_type[tag[2:]] = per_type.get(tag[2:], 0) + 1
        return {
            "answered": len(gold),
            "skipped": sum(1 for a in self.answers.values() if a.get("skip")),
            "total": len(self.items),
            "words": sum(1 for s in gold for t in s.tags if t != UNJUDGED),
            "entities": per_type,
            "events": len(self.events),
        }

    def rounds(self) -> list[dict]:
        return read_jsonl(self.directory / ROUNDS_FILE)


def _is_range(pair, length: int) -> bool:
    return (
        isinstance(pair, list)
        and len(pair) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
        and 0 <= pair[0] < pair[1] <= length
    )


def start_session(directory: Path, options: SelectOptions) -> None:
    """Record the options a new session starts with; a later batch must agree on the language and corpus."""
    file = directory / SESSION_FILE
    if file.is_file():
        started = from_record(SelectOptions, read_json(file), str(file))
        for key in ("lang", "corpus", "mode"):
            if getattr(started, key) != getattr(options, key):
                raise XlingError(
                    f"session {directory.name!r} was started with {key} {getattr(started, key)!r}, not "
                    f"{getattr(options, key)!r}; give another --session"
                )
        return
    (directory / "batches").mkdir(parents=True, exist_ok=True)
    write_json_atomic(file, asdict(options))


def write_batch(directory: Path, header: dict, items: list[dict]) -> Path:
    """The next batch file, written whole or not at all."""
    number = len(list((directory / "batches").glob("*.jsonl"))) + 1
    path = directory / "batches" / f"{number:04d}.jsonl"
    lines = [{**header, "batch": number}, *items]
    write_text_atomic(path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path
