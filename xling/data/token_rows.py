"""A labelled corpus published as token rows (a CSV with one word a row and its sentence's id), made into sentences
and split by a hash of each sentence, as the catalogue's `rows` table says (QuBERT's NER set, `qubert-qu`).

The rule: rows grouped by sentence id, each sentence's rows in the order of the CSV's index column (its first,
unnamed one), all files joined; a sentence whose words equal those of a sentence of the `without` corpus is left
out, and so is a repeat of a sentence already kept (the lowest sentence id first); an I-X after O or after another
type becomes B-X; then u = int(first 8 hex digits of sha256(the words joined by one space, lower-cased), 16) / 16^8:
below `aside` the sentence is kept aside for independent evaluation (never written), below `dev` it goes to
`dev`, the rest to `train`, each split in sentence-id order. The made files must have the sha256 the catalogue
pins: a difference means the inputs were not those the corpus was made from.
"""

from __future__ import annotations

import csv
import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from xling.data.conll import Sentence, conll_text
from xling.errors import XlingError
from xling.fileio import write_text_atomic

SPLITS = ("dev", "train")  # what a token-row corpus is split into; the part kept aside is never written
COLUMNS = ("sentence_id", "words", "labels")  # after the unnamed index column


@dataclass
class TokenRowSplits:
    """The catalogue's `rows` table of a corpus: what its sentences must not be, where the hash cuts, and the
    sha256 of each split made."""

    without: str  # a corpus whose sentences are left out, e.g. wikiann-qu
    without_splits: list[str]  # its splits to read: every one, the held-out test split included
    aside: float  # below this share of the hash range: kept aside, never written
    dev: float  # below this (and not aside): dev; the rest: train
    sha256: dict[str, str] = field(default_factory=dict)  # split -> the sum of the file made

    def __post_init__(self):
        if not 0 <= self.aside < self.dev < 1:
            raise XlingError(f"a rows table needs 0 <= aside < dev < 1, not aside {self.aside!r}, dev {self.dev!r}")
        if set(self.sha256) != set(SPLITS):
            raise XlingError(f"a rows table pins the sha256 of {' and '.join(SPLITS)}, not of {sorted(self.sha256)}")


def read_token_rows(files: Iterable[Path]) -> dict[int, list[tuple[int, str, str]]]:
    """Sentence id -> its rows (index, word, tag), from every file."""
    rows: dict[int, list[tuple[int, str, str]]] = defaultdict(list)
    for path in files:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, [])
            if tuple(header[1:]) != COLUMNS:
                raise XlingError(f"{path}: expected the columns (index), {', '.join(COLUMNS)}; got {header}")
            for number, row in enumerate(reader, start=2):
                try:
                    index, sentence, word, tag = row
                    rows[int(sentence)].append((int(index), word, tag))
                except ValueError:
                    raise XlingError(f"{path}:{number}: expected an index, a sentence id, a word and a tag") from None
    return rows


def in_iob2(tags: list[str]) -> list[str]:
    """An I-X that begins an entity (after O, or after another type) becomes B-X."""
    fixed: list[str] = []
    for tag in tags:
        previous = fixed[-1] if fixed else "O"
        begins = tag.startswith("I-") and (previous == "O" or previous[2:] != tag[2:])
        fixed.append("B-" + tag[2:] if begins else tag)
    return fixed


def share(words: list[str]) -> float:
    """Where a sentence falls in the hash range, from 0 to 1."""
    key = " ".join(words).lower()
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) / 16**8


def partition(
    rows: dict[int, list[tuple[int, str, str]]], without: set[tuple[str, ...]], spec: TokenRowSplits
) -> dict[str, list[Sentence]]:
    """The sentences of the rows, by the rule, into dev and train."""
    parts: dict[str, list[Sentence]] = {split: [] for split in SPLITS}
    kept: set[tuple[str, ...]] = set()
    for sentence_id in sorted(rows):
        ordered = sorted(rows[sentence_id])
        words = tuple(word for _, word, _ in ordered)
        if words in without or words in kept:
            continue
        kept.add(words)
        u = share(list(words))
        if u >= spec.aside:
            split = "dev" if u < spec.dev else "train"
            parts[split].append(Sentence(list(words), in_iob2([tag for _, _, tag in ordered])))
    return parts


def write_token_row_splits(
    spec: TokenRowSplits, files: list[Path], without: Iterable[Sentence], folder: Path, name: str
) -> list[Path]:
    """dev and train of corpus `name` made in `folder` from its token-row files, without the sentences of
    `without`; refused, and nothing written, where a made file's sha256 is not the one the catalogue pins."""
    parts = partition(read_token_rows(files), {tuple(s.tokens) for s in without}, spec)
    texts = {split: conll_text(sentences) for split, sentences in parts.items()}
    for split, text in texts.items():
        made = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if made != spec.sha256[split]:
            raise XlingError(
                f"{name}/{split} made from {', '.join(p.name for p in files)} has sha256 {made[:12]}…, not the "
                f"catalogue's {spec.sha256[split][:12]}…: the files or the {spec.without} sentences left out are not "
                "those it was made from"
            )
    for split, text in texts.items():
        write_text_atomic(folder / split, text)
    return [folder / split for split in SPLITS]
