"""`xling compare`: two systems scored on the same sentences, told apart by a paired bootstrap."""

from __future__ import annotations

from xling.errors import XlingError
from xling.scoring.bootstrap import DEFAULT_SAMPLES, mean_f1, paired
from xling.scoring.result import ScoredSentences


def compare(a: str, b: str, samples: int = DEFAULT_SAMPLES) -> dict:
    """F1 of A minus F1 of B, its 95% interval and p-value, resampling the sentences both were scored on. Each F1
    is the one its counts give (never a number the file merely states)."""
    first, second = ScoredSentences.read(a), ScoredSentences.read(b)
    counts_a, counts_b = first.sentence_counts, second.sentence_counts
    if first.sentences_digest != second.sentences_digest or len(counts_a) != len(counts_b):
        raise XlingError(f"{a} and {b} were scored on different sentences: a paired comparison needs the same")
    f1_a, f1_b = mean_f1(counts_a), mean_f1(counts_b)
    return {"a": a, "b": b, "f1_a": f1_a, "f1_b": f1_b, "sentences": len(counts_a)} | paired(
        counts_a, counts_b, samples
    )
