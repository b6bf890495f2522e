"""`xling compare`: two systems scored on the same sentences, told apart by a paired bootstrap."""

from __future__ import annotations

from pathlib import Path

from xling.errors import XlingError
from xling.fileio import read_json
from xling.scoring.bootstrap import DEFAULT_SAMPLES, mean_f1, paired

MAX_COUNT = 10**9  # entities in one sentence: far beyond any real one, and exact in every sum


def read_result(path: str) -> dict:
    """An `xling evaluate --bootstrap N --json` result, read through its schema: the sentences' digest and one
    count per sentence, [correct, predicted, gold], whole numbers with correct at most predicted and gold."""
    result = read_json(Path(path))
    if not isinstance(result, dict) or not isinstance(result.get("sentence_counts"), list):
        raise XlingError(f"{path} holds no sentence counts: write it with xling evaluate ... --bootstrap 1000 --json")
    counts = result["sentence_counts"]
    if not counts:
        raise XlingError(f"{path}: sentence_counts is empty: no sentence was scored")
    for number, count in enumerate(counts, start=1):
        if not (
            isinstance(count, list) and len(count) == 3 and all(type(n) is int and 0 <= n <= MAX_COUNT for n in count)
        ):
            raise XlingError(f"{path}: sentence {number}'s counts must be [correct, predicted, gold], whole numbers")
        if count[0] > min(count[1], count[2]):
            raise XlingError(f"{path}: sentence {number} has more correct entities than predicted or gold ones")
    if not isinstance(result.get("sentences_digest"), str):
        raise XlingError(
            f"{path} does not say which sentences it scored (sentences_digest): write it with xling evaluate"
        )
    return result


def compare(a: str, b: str, samples: int = DEFAULT_SAMPLES) -> dict:
    """F1 of A minus F1 of B, its 95% interval and p-value, resampling the sentences both were scored on. Each F1
    is the one its counts give (never a number the file merely states)."""
    first, second = read_result(a), read_result(b)
    if first["sentences_digest"] != second["sentences_digest"] or len(first["sentence_counts"]) != len(
        second["sentence_counts"]
    ):
        raise XlingError(f"{a} and {b} were scored on different sentences: a paired comparison needs the same")
    f1_a, f1_b = mean_f1(first["sentence_counts"]), mean_f1(second["sentence_counts"])
    return {"a": a, "b": b, "f1_a": f1_a, "f1_b": f1_b, "sentences": len(first["sentence_counts"])} | (
        paired(first["sentence_counts"], second["sentence_counts"], samples)
    )
