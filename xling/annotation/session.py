"""An annotation session: the batches `xling select` wrote (`batches.py`) and every answer given, in one folder
(the files are listed in docs/annotation.md). `answers.jsonl` is append-only: every answer, skip, replacement,
undo and adjudication (`records.py`), synced to disk before it is confirmed; the state is its replay, so a
killed server or a closed tab loses nothing. Each item has a version, the number of events about it: an answer
to an item answered since its tab looked (in another tab, by another person) is refused as a conflict unless it
gives the same labels or says to replace; a skip asks nobody. Undo takes back the asker's latest answer.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from xling.annotation import team
from xling.annotation.batches import SESSION_FILE, Item, read_batches
from xling.annotation.options import SelectOptions
from xling.annotation.records import (
    Adjudication,
    Answer,
    AnswerError,
    Given,
    Undo,
    given_from_record,
    now,
    origin,
    read_events,
)
from xling.annotation.rounds import ROUNDS_FILE, FailedRound, Round, read_rounds
from xling.data.conll import Sentence, conll_text
from xling.data.iob2 import type_counts
from xling.data.schemes import UNJUDGED
from xling.errors import XlingError
from xling.fileio import append_jsonl, write_text_atomic
from xling.names import no_link
from xling.records import read_record
from xling.workspace import Workspace, check_name

ANSWERS_FILE = "answers.jsonl"
GOLD_FILE = "gold.conll"
HISTORY = 50  # answers a page of a person's history lists


def session_dir(workspace: Workspace, name: str) -> Path:
    """The session's folder: neither it nor a log in it is a symbolic link."""
    directory = no_link(workspace.model_dir, Path("annotation") / check_name(name), "the session")
    for log in (ANSWERS_FILE, ROUNDS_FILE, team.CLAIMS_FILE):
        no_link(directory, Path(log), "the session's log")
    return directory


@dataclass
class Progress:
    """A session's progress, as the page and the command line show it."""

    answered: int
    skipped: int
    total: int
    words: int  # the judged words of the answered sentences
    entities: dict[str, int]  # their entities, by type
    people: dict[str, int]  # each person's answers in force
    shared: int  # items two people answered
    events: int
    waiting: int | None = None  # the sentences anyone has still to answer (`server.progress_of`)
    halfway: int | None = None  # of those, answered by one person and waiting for a second


class Session:
    def __init__(self, directory: Path):
        self.directory = directory
        self.lock = threading.Lock()
        file = directory / SESSION_FILE
        if not file.is_file():
            raise XlingError(f"no annotation session in {directory}; start one with: xling select CORPUS --lang LANG")
        self.options = read_record(file, SelectOptions)
        self.overlap = 0.0  # the share of items two people answer: `xling annotate --overlap`, set by its server
        self.load_batches()
        damaged: list[str] = []  # claims.jsonl's damaged lines: left out and shown on the page
        self.routing = team.Routing(directory, damaged)
        self.events, self.warnings = read_events(directory / ANSWERS_FILE, self.items, self.types), damaged
        self._replay()

    def load_batches(self) -> None:
        """Read the batch files (again: a retraining round adds one)."""
        read = read_batches(self.directory)
        with self.lock:
            self.headers, self.items, self.newest, self.types = read.headers, read.items, read.newest, read.types

    @classmethod
    def open(cls, workspace: Workspace, name: str) -> Session:
        return cls(session_dir(workspace, name))

    def _replay(self) -> None:
        """Each item's answers in force, one per slot (the item's own, or on an item two people answer, each
        person's), the adjudications, each item's version, each person's last answer, and every id seen. The gold
        answer of an item is its adjudicated one, else the first given."""
        histories: dict[str, dict[str, list[Given]]] = {}
        self.versions, self.ids, self.adjudicated, self.last_answer = {}, {}, {}, {}
        for event in self.events:
            self.ids[event.id] = event
            self.versions[event.item] = self.versions.get(event.item, 0) + 1
            slots = histories.setdefault(event.item, {})
            if isinstance(event, Undo):
                for history in slots.values():
                    history[:] = [a for a in history if a.id != event.undo]
            elif isinstance(event, Given):
                slots.setdefault(event.slot, []).append(event)
                self.last_answer[event.annotator or ""] = event.time  # the log is in time order
            else:
                self.adjudicated[event.item] = event.adjudicate
        self.slots = {item: {k: h[-1] for k, h in hs.items() if h} for item, hs in histories.items()}
        self.slots = {item: given for item, given in self.slots.items() if given}
        self.answers = {item: team.gold(given, self.adjudicated.get(item)) for item, given in self.slots.items()}

    def in_force(self) -> list[Given]:
        return [answer for given in self.slots.values() for answer in given.values()]

    def seen(self, annotator: str) -> None:
        """The person is at their tab now (pressing keys): their claims hold on."""
        self.routing.present[annotator] = time.time()

    def queue(self, annotator: str | None = None, claim: bool = True) -> list[Item]:
        """The items this person has still to answer, best first: the newest batch's (a round's batch replaces
        what was left of the one before, so the page works on the newest adapter's choices), then the overlap
        items of earlier batches still waiting for a second answer. A named person gets their own stream, topped
        up with new claims unless `claim` is False."""
        with self.lock:
            older = [k for k in self.slots if k not in self.newest and team.answered_twice(k, self.overlap)]
            candidates = self.newest + [k for k in older if k in self.items]
            if annotator is None:
                return [self.items[k] for k in candidates if not team.done(self.slots.get(k, {}), None)]
            stream = self.routing.stream(
                annotator,
                candidates,
                lambda k: not team.done(self.slots.get(k, {}), annotator),
                lambda k: team.answered_twice(k, self.overlap),
                self.last_answer,
                claim,
            )
            return [self.items[k] for k in stream]

    def record(self, request, annotator: str | None = None) -> dict:
        """Check an answer (or skip), write it to disk, then take it; returns the item's new version. A retry (an
        id already taken) changes nothing, nor does an answer with the labels already in force; an answer to a
        version answered since is refused unless it replaces. `annotator`: who answers, as the server resolved
        it (a name the request carries is not read again)."""
        answer = given_from_record(request, self.items, self.types)
        with self.lock:
            if answer.id in self.ids:
                return {"item": answer.item, "version": self.versions[answer.item]}
            answer.annotator, answer.time = annotator, now()  # the server's clock
            answer.slot = annotator if annotator and team.answered_twice(answer.item, self.overlap) else ""
            current = self.versions.get(answer.item, 0)
            in_force = self.slots.get(answer.item, {}).get(answer.slot)
            if isinstance(answer, Answer) and in_force is not None and answer.same_labels(in_force):
                return {"item": answer.item, "version": current}  # the same labels: nothing to ask or write
            if isinstance(in_force, Answer) and answer.version not in (None, current) and not answer.replace:
                details = {"answer": in_force.public(), "yours": answer.public(), "version": current}
                raise AnswerError(
                    team.conflict_message(in_force, answer.annotator), 409, details | self._sentence(answer)
                )
            answer.replaces = in_force.id if in_force else None
            self._write(answer)
            return {"item": answer.item, "version": self.versions[answer.item]}

    def undo(self, request, annotator: str | None = None) -> dict:
        """Take back the latest answer in force that `annotator` (as the server resolved it; else the request's
        tab, else anyone) gave: the
        reply says what was taken back, what is in force for that item now and the item itself, so that a page
        shows what was restored. A retried request (its id already taken) takes back no more."""
        if not isinstance(request, dict):
            raise AnswerError("an undo is a JSON object: {id, tab, annotator}", 400)
        given = origin(request)
        with self.lock:
            if given.get("id") in self.ids:
                earlier = self.ids[given["id"]]
                undone = self.ids.get(earlier.undo) if isinstance(earlier, Undo) else None
                return self._undone(undone)
            own = [a for a in self.in_force() if team.given_by(a, annotator, given.get("tab"))]
            if not own:
                return self._undone(None)
            last = max(own, key=lambda answer: answer.line)
            self._write(Undo(item=last.item, undo=last.id, **given | {"annotator": annotator}))
            return self._undone(last)

    def _undone(self, undone: Given | None) -> dict:
        if undone is None:
            return {"undone": None}
        restored = self.slots.get(undone.item, {}).get(undone.slot)
        return {"undone": undone.public(), "restored": restored.public() if restored else None} | self._sentence(undone)

    def _sentence(self, answer: Given) -> dict:
        return {"item": self.items[answer.item].to_dict(), "version": self.versions.get(answer.item, 0)}

    def history(self, annotator: str | None = None, offset: int = 0, limit: int = HISTORY) -> dict:
        """A person's answers in force (everyone's for None), newest first, a page of `limit` from `offset`, each
        with its sentence and version, to open as answered and replace by an edit."""
        with self.lock:
            own = [a for a in self.in_force() if annotator is None or a.annotator == annotator]
            own.sort(key=lambda a: -a.line)
            return {
                "total": len(own),
                "history": [{"answer": a.public()} | self._sentence(a) for a in own[offset : offset + limit]],
            }

    def disagreements(self) -> list[dict]:
        return team.disagreements(self.slots, self.adjudicated, self.items, self.tags)

    def agreement(self) -> dict:
        return team.agreement(self.slots, self.tags)

    def adjudicate(self, request, reviewer: str | None = None) -> dict:
        """Settle an item two people answered: by one of their answers, or by the reviewer's own."""
        with self.lock:
            if isinstance(request, dict) and request.get("id") in self.ids:
                return {"item": self.ids[request["id"]].item}
            settled = team.adjudication(request, self.slots, self.items, self.types, reviewer)
            settled.annotator = reviewer
            if isinstance(settled, Answer):
                self._write(settled)
                settled = Adjudication(item=settled.item, adjudicate=settled.id, annotator=settled.annotator)
            self._write(settled)
            return {"item": settled.item}

    def _write(self, event) -> None:
        """On disk first, then in the state (the caller holds the lock). A full disk refuses the answer (507: the
        page keeps it and sends it again); an export that fails after the answer is saved only warns."""
        try:
            append_jsonl(self.directory / ANSWERS_FILE, event.to_record())
        except OSError as err:
            raise AnswerError(
                f"not saved: {err.strerror}; free some disk space, the page sends it again", 507
            ) from None
        event.line = len(self.events)
        self.events.append(event)
        self._replay()
        try:
            self.export()
        except OSError as err:
            self.warnings = sorted(
                {*self.warnings, f"{GOLD_FILE} not rewritten: {err.strerror} (the answers are saved)"}
            )

    def tags(self, answer: Answer) -> list[str]:
        return answer.tags(len(self.items[answer.item].words))

    def gold(self) -> list[Sentence]:
        """The answered sentences (skips left out), in the order they were answered."""
        return [
            Sentence(self.items[a.item].tokens(), self.tags(a)) for a in self.answers.values() if isinstance(a, Answer)
        ]

    def export(self) -> None:
        write_text_atomic(self.directory / GOLD_FILE, conll_text(self.gold()))

    def progress(self) -> Progress:
        gold = self.gold()
        people, shared = team.progress(self.slots)
        return Progress(
            answered=len(gold),
            skipped=sum(1 for a in self.answers.values() if not isinstance(a, Answer)),
            total=len(self.items),
            words=sum(1 for s in gold for t in s.tags if t != UNJUDGED),
            entities=type_counts(sentence.tags for sentence in gold),
            people=people,
            shared=shared,
            events=len(self.events),
        )

    def rounds(self) -> list[Round | FailedRound]:
        """The rounds' lines; one damaged (by hand, or a disk that filled) is skipped and named in `warnings`."""
        damaged: list[str] = []
        rounds = read_rounds(self.directory / ROUNDS_FILE, damaged)
        self.warnings = sorted(set(self.warnings) | set(damaged))
        return rounds
