"""How scores read in tables and messages, one wording for the terminal, results.md and the generated docs:
F1 in points, its 95% interval in brackets, a paired difference signed with its interval and p-value."""

from __future__ import annotations


def interval_cell(f1_interval: list[float] | None) -> str:
    """A 95% interval of F1; empty where there is none."""
    if f1_interval is None:
        return ""
    low, high = f1_interval
    return f"[{100 * low:.1f}, {100 * high:.1f}]"


def p_cell(p: float, samples: int) -> str:
    """The p-value (one significant digit below 0.01, not "0.00"), or its bound where no resampled difference was
    as far from zero: p is then below 1/samples."""
    if p < 1 / samples:
        return f"p < {1 / samples:g}"
    return f"p = {p:.2f}" if p >= 0.01 else f"p = {p:.1g}"


def difference_cell(versus: dict) -> str:
    """A paired comparison: the difference of F1, its 95% interval and p-value."""
    v = versus
    return (
        f"{100 * v['difference']:+.1f} [{100 * v['low']:+.1f}, {100 * v['high']:+.1f}], {p_cell(v['p'], v['samples'])}"
    )


def sentences_cell(sentences: int | None, seen: int | None = None) -> str:
    """How many sentences a score rests on, and how many of them its task was trained on."""
    if sentences is None:
        return ""
    return f"{sentences:,}" + (f" ({seen:,} seen in training)" if seen else "")
