"""An annotation session: the batches `xling select` wrote, and every answer a person gave, in one folder.

    <workspace>/<model>/annotation/<session>/
        session.json      the options the session was started with (`SelectOptions`)
        batches/NNNN.jsonl  a header line (strategy, adapter, entity types), then one item per line
        answers.jsonl     append-only: every answer, skip, replacement and undo, each synced to disk before it
                          is confirmed; each carries the id its tab made for it, so a retried request is taken once
        gold.conll        the answers as CoNLL (`?` for words nobody judged), rewritten after each answer
        rounds.jsonl      one line per background retraining: sentences, words, dev F1

Nothing is ever rewritten in place but the exports, so a killed server or a closed tab loses no answer: the state
is the replay of `answers.jsonl`. Each item has a version, the number of events about it; an answer says which
version its tab saw, and one given to an item answered since (in another tab, by another person) is refused as a
conflict unless it says to replace that answer; a skip asks nobody, so any answer takes its place. Undo takes
back the latest answer of the tab that asks.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from xling.annotation.agreement import cohens_kappa, entity_f1
from xling.annotation.options import SelectOptions
from xling.data.conll import UNJUDGED, Sentence, conll_text
from xling.data.iob2 import entity_tags, type_counts
from xling.errors import XlingError
from xling.fileio import read_json, write_json_atomic, write_text_atomic
from xling.options import from_record
from xling.workspace import Workspace, check_name

SESSION_FILE = "session.json"
ANSWERS_FILE = "answers.jsonl"
GOLD_FILE = "gold.conll"
ROUNDS_FILE = "rounds.jsonl"


MAX_ID = 64  # characters of an answer's or a tab's id
HISTORY = 10  # answers a tab lists to edit
OVERLAP_ANSWERS = 2  # people who answer an item of the overlap share


class AnswerError(XlingError):
    """An answer the session cannot take; `status` is the HTTP status the page gets, `details` what else it needs
    to offer a choice (a conflict's answer in force)."""

    def __init__(self, message: str, status: int = 422, details: dict | None = None):
        super().__init__(message)
        self.status, self.details = status, details or {}


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
        headers, items, newest = [], {}, []
        for path in sorted((self.directory / "batches").glob("*.jsonl")):
            header, *lines = read_jsonl(path)
            headers.append(header)
            items |= {line["id"]: Item(**line, batch=header["batch"]) for line in lines}
            newest = [line["id"] for line in lines]
        with self.lock:
            self.headers, self.items, self.newest = headers, items, newest

    @classmethod
    def open(cls, workspace: Workspace, name: str) -> Session:
        return cls(session_dir(workspace, name))

    @property
    def types(self) -> list[str]:
        return sorted({t for header in self.headers for t in header["types"]})

    def _replay(self) -> None:
        """Each item's answers in force, one per slot (the item's own, or on an item two people answer, each
        person's), the adjudications, each item's version, and every id seen. The gold answer of an item is its
        adjudicated one, else the first given. Lines written before answers had ids are named by their place."""
        slots: dict[str, dict[str, list[dict]]] = {}
        self.versions, self.ids, self.adjudicated = {}, {}, {}
        for line, event in enumerate(self.events):
            event.setdefault("id", f"line-{line + 1}")
            self.ids[event["id"]] = event
            item = event["item"]
            self.versions[item] = self.versions.get(item, 0) + 1
            histories = slots.setdefault(item, {})
            if event.get("undo") is True:  # a log from before ids: the last answer still in force, anyone's
                in_force = [h for hs in slots.values() for h in hs.values() if h]
                if in_force:
                    max(in_force, key=lambda history: history[-1]["line"]).pop()
            elif "undo" in event:
                for history in histories.values():
                    history[:] = [a for a in history if a["id"] != event["undo"]]
            elif "adjudicate" in event:
                self.adjudicated[item] = event["adjudicate"]
            else:
                histories.setdefault(event.get("slot", ""), []).append(event | {"line": line})
        self.slots = {item: {k: h[-1] for k, h in hs.items() if h} for item, hs in slots.items()}
        self.slots = {item: given for item, given in self.slots.items() if given}
        self.answers = {item: self._gold_answer(item, given) for item, given in self.slots.items()}

    def _gold_answer(self, item: str, given: dict[str, dict]) -> dict:
        chosen = self.adjudicated.get(item)
        return next((a for a in given.values() if a["id"] == chosen), min(given.values(), key=lambda a: a["line"]))

    def in_force(self) -> list[dict]:
        """Every answer in force, in every slot."""
        return [answer for given in self.slots.values() for answer in given.values()]

    def done(self, key: str, annotator: str | None) -> bool:
        """Whether an item is done for this person: answered once, or, for an item two people answer, by two
        people or by this one."""
        given = self.slots.get(key, {})
        return "" in given or len(given) >= OVERLAP_ANSWERS or (annotator is not None and annotator in given)

    def queue(self, annotator: str | None = None) -> list[Item]:
        """The newest batch's items this person has still to answer, best first: a round's batch replaces what
        was left of the one before, so the page always works on the newest adapter's choices and suggestions."""
        return [self.items[key] for key in self.newest if not self.done(key, annotator)]

    def check(self, record: dict) -> dict:
        """An answer as the page posts it, checked: {item, spans: [{start, end, label}], judged: [start, end]
        or null (the whole sentence)} or {item, skip: true}."""
        if not isinstance(record, dict) or not isinstance(record.get("item"), str):
            raise AnswerError("an answer is a JSON object with the item's id", 400)
        item = self.items.get(record["item"])
        if item is None:
            raise AnswerError(f"no sentence {record['item']!r} in this session", 404)
        given = {"item": item.id} | _provenance(record)
        if record.get("skip") is True:
            return given | {"skip": True}
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
        return given | {"spans": clean, "judged": judged}

    def record(self, answer: dict, annotator: str | None = None, overlap: float = 0.0) -> dict:
        """Check an answer (or skip), write it to disk, then take it; returns the item's new version. A retry (an
        id already taken) changes nothing; an answer to a version answered since is refused unless it replaces.
        `annotator`: the name when the answer carries none; `overlap`: the share of items two people answer."""
        answer = self.check(answer)
        with self.lock:
            if answer.get("id") in self.ids:
                return {"item": answer["item"], "version": self.versions[answer["item"]]}
            annotator = answer.pop("annotator", None) or annotator
            slot = annotator if annotator and answered_twice(answer["item"], overlap) else ""
            current, in_force = self.versions.get(answer["item"], 0), self.slots.get(answer["item"], {}).get(slot)
            replace, seen = answer.pop("replace", False), answer.pop("version", None)
            if in_force and not in_force.get("skip") and seen is not None and seen != current and not replace:
                raise AnswerError(
                    _conflict_message(in_force, annotator), 409, {"answer": _public(in_force), "version": current}
                )
            answer |= {"annotator": annotator} if annotator else {}
            answer |= {"slot": slot} if slot else {}
            answer |= {"replaces": in_force["id"]} if in_force else {}
            self._write(answer | {"id": answer.get("id") or _new_id(), "time": round(time.time(), 3)})
            return {"item": answer["item"], "version": self.versions[answer["item"]]}

    def undo(self, request: dict) -> dict | None:
        """Take back the latest answer in force that the request's tab gave (any tab's for a request naming
        none): returns it, None if there is none. A retried request (its id already taken) takes back no more."""
        given = _provenance(request if isinstance(request, dict) else {})
        with self.lock:
            if given.get("id") in self.ids:
                earlier = self.ids[given["id"]].get("undo")
                return _public(self.ids[earlier]) if isinstance(earlier, str) and earlier in self.ids else None
            own = [a for a in self.in_force() if "tab" not in given or a.get("tab") == given["tab"]]
            if not own:
                return None
            last = max(own, key=lambda answer: answer["line"])
            event = {"undo": last["id"], "item": last["item"], "id": given.get("id") or _new_id()}
            self._write(event | ({"tab": given["tab"]} if "tab" in given else {}) | {"time": round(time.time(), 3)})
            return _public(last)

    def history(self, tab: str, limit: int = HISTORY) -> list[dict]:
        """The tab's latest answers in force, newest first, each with its sentence and version, to edit."""
        with self.lock:
            own = sorted((a for a in self.in_force() if a.get("tab") == tab), key=lambda a: -a["line"])
            return [
                {"answer": _public(a), "item": self.items[a["item"]].to_dict(), "version": self.versions[a["item"]]}
                for a in own[:limit]
            ]

    def disagreements(self) -> list[dict]:
        """Items two people answered differently and nobody has settled: each with its sentence and answers."""
        found = []
        for item, given in self.slots.items():
            answers = _labelled(given)
            if len(answers) >= 2 and item not in self.adjudicated and len({tuple(self.tags(a)) for a in answers}) > 1:
                found.append({"item": self.items[item].to_dict(), "answers": [_public(a) for a in answers]})
        return found

    def adjudicate(self, request: dict, reviewer: str | None = None) -> dict:
        """Settle an item two people answered: {id, item, choose: the id of the answer that becomes gold}."""
        given = _provenance(request if isinstance(request, dict) else {})
        with self.lock:
            if given.get("id") in self.ids:
                return {"item": self.ids[given["id"]]["item"]}
            item, chosen = request.get("item"), request.get("choose")
            if not any(a["id"] == chosen for a in self.slots.get(item, {}).values()):
                raise AnswerError(f"{chosen!r} is no answer in force to {item!r}", 404)
            reviewer = given.get("annotator") or reviewer
            event = {"adjudicate": chosen, "item": item, "id": given.get("id") or _new_id()}
            self._write(event | ({"annotator": reviewer} if reviewer else {}) | {"time": round(time.time(), 3)})
            return {"item": item}

    def agreement(self) -> dict:
        """Entity F1 and Cohen's kappa between the first two people on every item both answered."""
        pairs = []
        for given in self.slots.values():
            answers = _labelled(given)
            if len(answers) >= 2:
                pairs.append((self.tags(answers[0]), self.tags(answers[1])))
        return {"items": len(pairs), "entity_f1": entity_f1(pairs), "kappa": cohens_kappa(pairs)}

    def _write(self, event: dict) -> None:
        """On disk first, then in the state (the caller holds the lock)."""
        append_jsonl(self.directory / ANSWERS_FILE, event)
        self.events.append(event)
        self._replay()
        self.export()

    def tags(self, answer: dict) -> list[str]:
        """An answer's tags: its spans B-/I-, the other judged words O, the rest `?`."""
        item = self.items[answer["item"]]
        start, end = answer["judged"] or (0, len(item.words))
        tags = [UNJUDGED] * len(item.words)
        tags[start:end] = ["O"] * (end - start)
        for span in answer["spans"]:
            tags[span["start"] : span["end"]] = entity_tags(span["label"], span["end"] - span["start"])
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
        per_type = type_counts(sentence.tags for sentence in gold)
        return {
            "agreement": self.agreement(),
            "answered": len(gold),
            "skipped": sum(1 for a in self.answers.values() if a.get("skip")),
            "total": len(self.items),
            "words": sum(1 for s in gold for t in s.tags if t != UNJUDGED),
            "entities": per_type,
            "events": len(self.events),
        }

    def rounds(self) -> list[dict]:
        return read_jsonl(self.directory / ROUNDS_FILE)


def _provenance(record: dict) -> dict:
    """The id the tab made for this request, the tab's id, the item version it saw and whether it replaces
    the answer in force: each optional (a script's answer without a version replaces whatever is there)."""
    given = {}
    for key in ("id", "tab", "annotator"):
        if record.get(key) is not None:
            if not isinstance(record[key], str) or not 0 < len(record[key]) <= MAX_ID:
                raise AnswerError(f"{key} must be text of 1 to {MAX_ID} characters", 400)
            given[key] = record[key]
    version = record.get("version")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool) or version < 0):
        raise AnswerError("version must be a whole number from 0", 400)
    if not isinstance(record.get("replace", False), bool):
        raise AnswerError("replace must be true or false", 400)
    return given | {"version": version, "replace": record.get("replace", False)}


def answered_twice(item: str, overlap: float) -> bool:
    """Whether an item is one of the `overlap` share that two people answer: fixed by its id's hash, so each
    server and each person agree on it."""
    return int(hashlib.sha256(f"xling-overlap:{item}".encode()).hexdigest()[:8], 16) / 16**8 < overlap


def _labelled(given: dict[str, dict]) -> list[dict]:
    """An item's answers in force that are no skips, first given first."""
    return sorted((a for a in given.values() if not a.get("skip")), key=lambda a: a["line"])


def _public(answer: dict) -> dict:
    """An answer as the page gets it back."""
    keys = ("id", "item", "spans", "judged", "skip", "annotator", "tab", "slot", "time")
    return {key: answer[key] for key in keys if key in answer}


def _conflict_message(in_force: dict, annotator: str | None) -> str:
    other = in_force.get("annotator")
    who = f"by {other}" if other and other != annotator else "in another tab"  # one person's two tabs
    return f"this sentence was answered {who} meanwhile: keep that answer, or replace it with yours"


def _new_id() -> str:
    return uuid.uuid4().hex


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
        before, now = _fixed(started), _fixed(options)
        for key in before:
            if before[key] != now[key]:
                raise XlingError(
                    f"session {directory.name!r} was started with {key} {before[key]!r}, not {now[key]!r}; "
                    "give another --session"
                )
        return
    (directory / "batches").mkdir(parents=True, exist_ok=True)
    write_json_atomic(file, asdict(options))


def _fixed(options: SelectOptions) -> dict:
    """What every batch of a session shares."""
    return {"lang": options.tagger.lang, "corpus": options.corpus, "mode": options.mode}


def write_batch(directory: Path, header: dict, items: list[dict]) -> Path:
    """The next batch file, written whole or not at all."""
    number = len(list((directory / "batches").glob("*.jsonl"))) + 1
    path = directory / "batches" / f"{number:04d}.jsonl"
    lines = [{**header, "batch": number}, *items]
    write_text_atomic(path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path
