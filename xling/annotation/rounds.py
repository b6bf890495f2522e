"""`rounds.jsonl`: the session's retraining rounds, one line each, written by the round and read by the page and
the next round: a `Round` that ran (round 0 is where the session started), or a `FailedRound` that stopped with
an error, which waits for new answers."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from xling.fileio import read_jsonl
from xling.records import from_record, set_fields

ROUNDS_FILE = "rounds.jsonl"


@dataclass
class Round:
    """A round that ran: how many sentences were answered then, the F1 of the adapter it kept or dropped on dev
    data no epoch was chosen on, and the session's adapter after it."""

    round: int
    sentences: int
    f1: float | None = None
    adapter: str | None = None
    words: int | None = None
    train_sentences: int | None = None
    dev: str | None = None  # what it was judged on, in words
    previous_f1: float | None = None  # the session's adapter before it, on the same dev data
    kept: bool | None = None
    seconds: float | None = None  # training and scoring
    next_batch: str | None = None  # the batch it chose with the adapter it kept
    next_items: int | None = None
    total_seconds: float | None = None

    def to_record(self) -> dict:
        return set_fields(self)


@dataclass
class FailedRound:
    """A round that stopped: what it said, and the answers it had (it is tried again only after new ones)."""

    failed: str
    sentences: int

    def to_record(self) -> dict:
        return asdict(self)


def round_from_record(value, where: str) -> Round | FailedRound:
    return from_record(FailedRound if isinstance(value, dict) and "failed" in value else Round, value, where)


def read_rounds(path: Path, damaged: list[str]) -> list[Round | FailedRound]:
    """The rounds of `path`; a damaged line (by hand, or a disk that filled) is skipped and named in `damaged`."""
    return read_jsonl(Path(path), damaged, round_from_record)


def ran(rounds: list[Round | FailedRound]) -> list[Round]:
    return [r for r in rounds if isinstance(r, Round)]
