"""Several people on one session: how the sentences are shared out among them, and what their answers say
together.

Routing, as Prodigy's named sessions do it: each person works through their own stream of the newest batch.
Without overlap a sentence goes to one person: a person holds up to `HOLD` sentences at a time, claimed as their
queue is read, and nobody else is shown a sentence another holds until it is answered or its holder has been
away (no answer, no key pressed in their tab) for `HOLD_SECONDS`. An overlap sentence (`answered_twice`) is in
every person's stream until two people have answered it, across batches and restarts. Claims are kept in
`claims.jsonl`, so a restart keeps them.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from xling.annotation.agreement import report
from xling.annotation.batches import Item
from xling.annotation.records import Adjudication, Answer, AnswerError, Given, given_from_record, origin
from xling.fileio import append_jsonl
from xling.options import at_least
from xling.records import read_records

CLAIMS_FILE = "claims.jsonl"
HOLD = 10  # sentences one person holds at a time where several share a session
HOLD_SECONDS = 5 * 60  # a claim lapses after this long without an answer, or a key pressed, from its holder
OVERLAP_ANSWERS = 2  # people who answer an item of the overlap share
REVIEW_SLOT = "review"  # where a reviewer's own answer to a disagreement is kept


def answered_twice(item: str, overlap: float) -> bool:
    """Whether an item is one of the `overlap` share that two people answer: fixed by its id's hash, so each
    server and each person agree on it."""
    return int(hashlib.sha256(f"xling-overlap:{item}".encode()).hexdigest()[:8], 16) / 16**8 < overlap


@dataclass
class Claim:
    """A line of `claims.jsonl`: `annotator` took `item` into their stream at `time` (seconds since the epoch)."""

    item: str
    annotator: str
    time: float

    def __post_init__(self):
        at_least("time", self.time, 0)


class Routing:
    """Who holds which sentence (see the module's note)."""

    def __init__(self, directory: Path, damaged: list[str] | None = None):
        """`damaged`: the damaged lines of claims.jsonl are named there and left out (a claim is advice)."""
        self.file = directory / CLAIMS_FILE
        self.claims: dict[str, tuple[str, float]] = {}
        self.present: dict[str, float] = {}  # when each person's tab last said they were pressing keys
        for claim in read_records(self.file, Claim, damaged if damaged is not None else []):
            self.claims[claim.item] = claim.annotator, claim.time

    def holder(self, item: str, last_answer: dict[str, float], now: float) -> str | None:
        """Who holds an item now: nobody once its holder has been away (no answer, no key) for HOLD_SECONDS since
        the claim."""
        if item not in self.claims:
            return None
        person, since = self.claims[item]
        active = max(since, last_answer.get(person, 0.0), self.present.get(person, 0.0))
        return person if now - active < HOLD_SECONDS else None

    def stream(
        self,
        person: str,
        candidates: list[str],
        open_to: Callable[[str], bool],
        shared: Callable[[str], bool],
        last_answer: dict[str, float],
        claim: bool = True,
    ) -> list[str]:
        """The ids `person` is to answer, in the candidates' order: the shared ones still open to them, the ones
        they hold, and (unless `claim` is False) as many free ones, newly claimed, as bring their holding up to
        HOLD."""
        now = time.time()
        chosen: set[str] = set()
        free, held = [], 0
        for key in (k for k in candidates if open_to(k)):
            if shared(key):
                chosen.add(key)
            elif (holder := self.holder(key, last_answer, now)) == person:
                chosen.add(key)
                held += 1
            elif holder is None:
                free.append(key)
        for key in free[: max(0, HOLD - held) if claim else 0]:
            self.claims[key] = person, now
            try:  # a claim is advice: on a full disk it lives in memory only
                append_jsonl(self.file, {"item": key, "annotator": person, "time": round(now, 3)})
            except OSError:
                pass
            chosen.add(key)
        return [key for key in candidates if key in chosen]


def done(given: dict[str, Given], annotator: str | None) -> bool:
    """Whether an item is done for this person: answered once, or, for an item two people answer, by two
    people or by this one (a reviewer's answer counts for nobody)."""
    given = {slot: answer for slot, answer in given.items() if slot != REVIEW_SLOT}
    return "" in given or len(given) >= OVERLAP_ANSWERS or (annotator is not None and annotator in given)


def given_by(answer: Given, person: str | None, tab: str | None) -> bool:
    """Whether an answer is this person's (without a name: this tab's; without either: anyone's)."""
    return answer.annotator == person if person else tab is None or answer.tab == tab


def progress(slots: dict[str, dict[str, Given]]) -> tuple[dict[str, int], int]:
    """Each person's answers in force, and the items two people answered."""
    people: dict[str, int] = {}
    for given in slots.values():
        for slot, answer in given.items():
            if answer.annotator and slot != REVIEW_SLOT and isinstance(answer, Answer):  # skips are no work done
                people[answer.annotator] = people.get(answer.annotator, 0) + 1
    return people, sum(1 for given in slots.values() if len(labelled(given)) >= 2)


def gold(given: dict[str, Given], chosen: str | None) -> Given:
    """An item's gold answer: the one a reviewer chose, else the first given."""
    return next((a for a in given.values() if a.id == chosen), min(given.values(), key=lambda a: a.line))


def labelled(given: dict[str, Given]) -> list[Answer]:
    """An item's annotators' answers in force that are no skips, first given first: a reviewer's own answer
    (the review slot) settles, and is nobody's in agreement."""
    answers = (a for slot, a in given.items() if isinstance(a, Answer) and slot != REVIEW_SLOT)
    return sorted(answers, key=lambda a: a.line)


def disagreements(slots: dict[str, dict[str, Given]], adjudicated: dict, items: dict[str, Item], tags) -> list[dict]:
    """Items two people answered differently and nobody has settled: each with its sentence and both answers."""
    found = []
    for item, given in slots.items():
        answers = labelled(given)
        if len(answers) >= 2 and item not in adjudicated and len({tuple(tags(a)) for a in answers}) > 1:
            found.append({"item": items[item].to_dict(), "answers": [a.public() for a in answers]})
    return found


def agreement(slots: dict[str, dict[str, Given]], tags) -> dict:
    """Agreement per pair of people on every item both answered (`agreement.report`), and how many items two
    people answered in all."""
    by_pair: dict[tuple[str, str], list] = {}
    shared = 0
    for given in slots.values():
        answers = [a for a in labelled(given) if a.annotator]
        shared += len(answers) >= 2
        for first, second in itertools.combinations(sorted(answers, key=lambda a: a.annotator), 2):
            if first.annotator != second.annotator:
                by_pair.setdefault((first.annotator, second.annotator), []).append((tags(first), tags(second)))
    pairs = [{"people": list(people), **report(tag_pairs)} for people, tag_pairs in sorted(by_pair.items())]
    return {"items": shared, "pairs": pairs}


def adjudication(
    request, slots: dict[str, dict[str, Given]], items: dict[str, Item], types: list[str], reviewer: str | None
):
    """A reviewer's settlement, checked: {id, item, choose: the id of an answer in force} takes one person's
    answer; {id, item, spans, judged} is the reviewer's own (an `Answer` in the review slot). `reviewer`: who
    settles, never one of the people who disagree."""
    if not isinstance(request, dict) or not isinstance(request.get("item"), str):
        raise AnswerError("an adjudication is a JSON object with the item's id", 400)
    item, given = request["item"], slots.get(request["item"], {})
    if len(labelled(given)) < 2:
        raise AnswerError(f"{item!r} has no two answers to settle", 409)
    if reviewer is None or reviewer in {a.annotator for a in labelled(given)}:
        raise AnswerError(f"{reviewer or 'nobody'} answered this sentence: someone who did not settles it", 403)
    if "choose" in request:
        if not any(a.id == request["choose"] for a in given.values()):
            raise AnswerError(f"{request['choose']!r} is no answer in force to {item!r}", 404)
        return Adjudication(item=item, adjudicate=request["choose"], **origin(request))
    own = given_from_record({k: v for k, v in request.items() if k not in ("version", "replace")}, items, types)
    if not isinstance(own, Answer):
        raise AnswerError("a review answers with spans, or chooses an answer", 400)
    own.slot = REVIEW_SLOT
    return own


def conflict_message(in_force: Given, annotator: str | None) -> str:
    other = in_force.annotator
    who = f"by {other}" if other and other != annotator else "in another tab"  # one person's two tabs
    return f"this sentence was answered {who} meanwhile: keep that answer, or replace it with yours"
