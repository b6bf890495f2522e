"""`xling compare`: two systems scored on the same sentences, told apart by a paired bootstrap."""

from __future__ import annotations

from pathlib import Path

from xling.errors import XlingError
from xling.fileio import read_json
from xling.scoring.bootstrap import DEFAULT_SAMPLES, paired


def read_result(path: str) -> dict:
    """An `xling evaluate --bootstrap N --json` result, with its sentences' counts."""
    result = read_json(Path(path))
    if not isinstance(result, dict) or not isinstance(result.get("sentence_counts"), list):
        raise XlingError(f"{path} holds no sentence counts: write it with xling evaluate ... --bootstrap 1000 --json")
    counts = result["sentence_counts"]
    if not all(isinstance(c, list) and len(c) == 3 and all(type(n) is int and n >= 0 for n in c) for c in counts):
        raise XlingError(f"{path}: sentence_counts must be [correct, predicted, gold] counts, one per sentence")
    return result


def compare(a: str, b: str, samples: int = DEFAULT_SAMPLES) -> dict:
    """F1 of A minus F1 of B, its 95% interval and p-value, resampling the sentences both were scored on."""
    first, second = read_result(a), read_result(b)
    if first.get("sentences_digest") != second.get("sentences_digest"):
        raise XlingError(f"{a} and {b} were scored on different sentences: a paired comparison needs the same")
    return {"a": a, "b": b, "f1_a": first["f1"], "f1_b": second["f1"], "sentences": len(first["sentence_counts"])} | (
        paired(first["sentence_counts"], second["sentence_counts"], samples)
    )
