"""What every way of carrying labels writes: silver CoNLL files cut into train and dev by a fixed draw, with a
report, as one folder written whole or not at all; and the evaluation sentences such a file never holds."""

from __future__ import annotations

import hashlib
from pathlib import Path

from xling.data.conll import Sentence, conll_text
from xling.data.fingerprints import fingerprints
from xling.data.overlap import sentences_of
from xling.data.schemes import UNJUDGED
from xling.errors import XlingError
from xling.fileio import atomic_directory, write_json_atomic
from xling.records import set_fields

REPORT = "report.json"  # written last of the folder's files; a recipe step is done when it is there


def drawn(words: list[str], share: float, salt: str) -> bool:
    """A fixed, seedless draw by the sentence's hash: whether it is among the `share` picked."""
    digest = hashlib.sha256(f"{salt}\n{' '.join(words)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def evaluation_prints(references: list[str]) -> set[str]:
    return fingerprints(s.tokens for reference in references for s in sentences_of(reference))


def check_new(output: str, overwrite: bool) -> None:
    """Refuse an output folder that exists, before any long work, unless it is to be replaced."""
    if Path(output).exists() and not overwrite:
        raise XlingError(f"{output} already exists; add --overwrite to replace it")


def write_silver(
    output: str, kept: list[Sentence], dev_share: float, report, overwrite: bool, extra: dict[str, str] | None = None
) -> None:
    """Write train.conll and dev.conll (the `dev_share` drawn among the sentences labelled whole), the `extra`
    files (name: text) and the report (a dataclass with `train` and `dev`, which get the split's sizes)."""
    if not kept:
        raise XlingError("no sentence came out labelled; nothing to write")
    # dev data is labelled whole: a sentence with unjudged words (`?`) always trains
    to_dev = [drawn(s.tokens, dev_share, "dev") and UNJUDGED not in s.tags for s in kept]
    dev = [s for s, chosen in zip(kept, to_dev) if chosen]
    train = [s for s, chosen in zip(kept, to_dev) if not chosen]
    report.train, report.dev = len(train), len(dev)
    with atomic_directory(Path(output), overwrite=overwrite, replaces=(REPORT,)) as target:
        (target / "train.conll").write_text(conll_text(train), encoding="utf-8")
        (target / "dev.conll").write_text(conll_text(dev), encoding="utf-8")
        for name, text in (extra or {}).items():
            (target / name).write_text(text, encoding="utf-8")
        write_json_atomic(target / REPORT, set_fields(report))
