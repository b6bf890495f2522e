"""Sentences as compact fingerprints, to find the same sentence in two data sets.

A sentence's key is its text with every space removed, NFC-normalised and case-folded, so a CoNLL sentence
(`Lima , Perú`) and the same line of raw text (`Lima, Perú`) meet; its fingerprint is the first 16 hex digits of
the key's sha256 (collisions are negligible at any corpus size xling sees).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from xling.errors import XlingError
from xling.fileio import write_text_atomic
from xling.options import shown
from xling.records import Record

FINGERPRINTS_FILE = "fingerprints.json"  # beside a task adapter: the sentences it was trained on
NORMALISATION = "nfc-casefold-no-spaces-sha256-16"


def sentence_key(tokens: Iterable[str]) -> str:
    return "".join(unicodedata.normalize("NFC", "".join(tokens)).casefold().split())


def fingerprint(tokens: Iterable[str]) -> str:
    return hashlib.sha256(sentence_key(tokens).encode("utf-8")).hexdigest()[:16]


def fingerprints(sentences: Iterable[list[str]]) -> set[str]:
    return {fingerprint(tokens) for tokens in sentences}


HEX16 = re.compile(r"^[0-9a-f]{16}$")


@dataclass
class Fingerprints(Record):
    """`fingerprints.json`: how sentences were fingerprinted, and the fingerprints."""

    normalisation: str
    sentences: list[str]

    def __post_init__(self):
        if self.normalisation != NORMALISATION:
            raise XlingError(f"fingerprinted as {shown(self.normalisation)}, not as this xling does ({NORMALISATION})")
        if not all(isinstance(p, str) and HEX16.match(p) for p in self.sentences):
            raise XlingError("each fingerprint must be 16 hex digits")


def fingerprints_text(prints: set[str]) -> str:
    return json.dumps(asdict(Fingerprints(NORMALISATION, sorted(prints)))) + "\n"


def write_fingerprints(folder: Path, prints: set[str]) -> None:
    write_text_atomic(Path(folder) / FINGERPRINTS_FILE, fingerprints_text(prints))


def read_fingerprints(folder: Path | None) -> set[str] | None:
    """The fingerprints saved in `folder`; None when it has none (an adapter trained elsewhere or before)."""
    file = Path(folder) / FINGERPRINTS_FILE if folder else None
    if file is None or not file.is_file():
        return None
    return set(Fingerprints.read(file).sentences)


def trained_on(folders: list[Path]) -> set[str] | None:
    """Every sentence the tasks in `folders` were trained on; None when any of them does not say."""
    found = [read_fingerprints(folder) for folder in folders]
    return None if not found or any(prints is None for prints in found) else set().union(*found)


def sentences_digest(sentences: Iterable[list[str]]) -> str:
    """One fingerprint of a data set's sentences in their order: two results are paired only if it agrees."""
    return hashlib.sha256(" ".join(fingerprint(tokens) for tokens in sentences).encode()).hexdigest()[:16]


def lines_holding(lines: list[str], sentences: Iterable[list[str]], shortest: int = 16) -> set[int]:
    """The indices of the lines that hold one of `sentences`, compared by key (spaces, case and Unicode form
    aside): the same text, or, for a sentence of at least `shortest` characters, a line that contains it (a
    paragraph a dev sentence came from); a shorter one (`Lima`) only where it is the whole line."""
    keys = {sentence_key(tokens) for tokens in sentences} - {""}
    line_keys = [sentence_key([line]) for line in lines]
    found = {i for i, key in enumerate(line_keys) if key in keys}
    text, starts, at = "\n".join(line_keys), [], 0
    for key in line_keys:
        starts.append(at)
        at += len(key) + 1
    for key in (k for k in keys if len(k) >= shortest):
        position = text.find(key)
        while position >= 0:
            found.add(bisect.bisect_right(starts, position) - 1)
            position = text.find(key, position + 1)
    return found
