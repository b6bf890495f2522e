"""A corpus's silver data made clean: deduplicated, without any sentence of its labelled splits, and cut by
hash into `silver-dev` (for reporting) and `silver-pool` (for silver training and simulated annotation).

A sentence goes to `silver-dev` when the sha256 of `xling-silver:` and its fingerprint falls below `dev_share`
of the hash range: the same files give the same split whatever their order, and a sentence stays on its side
when others are added or removed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from xling.data.conll import Sentence, conll_text, read_conll
from xling.data.fingerprints import fingerprint
from xling.errors import XlingError
from xling.fileio import file_sha256, write_text_atomic
from xling.records import read_record

SPLITS = ("silver-dev", "silver-pool")
SALT = "xling-silver:"


@dataclass
class SilverSplits:
    """The catalogue's `silver` table of a corpus: where its silver sentences are and what they must not hold."""

    source: str  # the split holding the silver sentences, e.g. extra
    without: list[str] = field(default_factory=list)  # labelled splits whose sentences are removed
    dev_share: float = 0.3

    def __post_init__(self):
        if not 0 < self.dev_share < 1:
            raise XlingError(f"a silver dev_share must be between 0 and 1, not {self.dev_share!r}")


def in_silver_dev(tokens: list[str], dev_share: float) -> bool:
    digest = hashlib.sha256((SALT + fingerprint(tokens)).encode()).hexdigest()
    return int(digest[:12], 16) < dev_share * 16**12


def partition(silver: list[Sentence], labelled: list[Sentence], dev_share: float) -> dict[str, list[Sentence]]:
    """`silver` without duplicates and without the sentences of `labelled`, cut into silver-dev and silver-pool."""
    seen = {fingerprint(s.tokens) for s in labelled}
    parts: dict[str, list[Sentence]] = {split: [] for split in SPLITS}
    for sentence in silver:
        key = fingerprint(sentence.tokens)
        if key not in seen:
            seen.add(key)
            parts[SPLITS[0] if in_silver_dev(sentence.tokens, dev_share) else SPLITS[1]].append(sentence)
    return parts


@dataclass(frozen=True)
class SilverRecord:
    """`.silver.json` beside the silver splits: the share and the sha256 of the files they were made from."""

    dev_share: float
    inputs: dict[str, str]

    @classmethod
    def read(cls, file: Path) -> SilverRecord | None:
        """The record, or None where there is none this xling wrote (the splits are made again)."""
        try:
            return read_record(file, cls) if file.is_file() else None
        except XlingError:
            return None


def write_silver(spec: SilverSplits, source: Path, labelled: list[Path], folder: Path, split: str) -> Path:
    """`folder/split`, made from the source and labelled files unless already made from these very files
    (their sha256 and the share are kept beside it, in `.silver.json`)."""
    made = SilverRecord(spec.dev_share, {str(p): file_sha256(p) for p in [source, *labelled]})
    record, target = folder / ".silver.json", folder / split
    if target.is_file() and SilverRecord.read(record) == made:
        return target
    labelled_sentences = [s for path in labelled for s in read_conll(path)]
    parts = partition(read_conll(source), labelled_sentences, spec.dev_share)
    for name, sentences in parts.items():
        write_text_atomic(folder / name, conll_text(sentences))
    write_text_atomic(record, json.dumps(asdict(made), indent=1, sort_keys=True) + "\n")
    return target
