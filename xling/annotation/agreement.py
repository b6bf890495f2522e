"""Agreement between two people on the sentences both answered: entity-level F1 (one's entities scored against
the other's; the measure is symmetric) and Cohen's kappa on the tags of the words both judged. Words either
left unjudged (`?`, spans mode) count for neither."""

from __future__ import annotations

from collections import Counter

from xling.data.conll import UNJUDGED


def judged_by_both(first: list[str], second: list[str]) -> tuple[list[str], list[str]]:
    """The two tag sequences with every word one of them left unjudged set to O (kept for entity spans)."""
    both = [a != UNJUDGED and b != UNJUDGED for a, b in zip(first, second)]
    return [a if keep else "O" for a, keep in zip(first, both)], [b if keep else "O" for b, keep in zip(second, both)]


def entity_f1(pairs: list[tuple[list[str], list[str]]]) -> float | None:
    """2 × shared entities / (first's + second's), over all pairs; None without any entity."""
    from xling.scoring.bootstrap import sentence_counts

    if not pairs:
        return None
    firsts, seconds = zip(*(judged_by_both(a, b) for a, b in pairs))
    shared, second, first = sentence_counts(list(firsts), list(seconds)).sum(axis=0)
    return float(2 * shared / (first + second)) if first + second else None


def cohens_kappa(pairs: list[tuple[list[str], list[str]]]) -> float | None:
    """(observed agreement - chance agreement) / (1 - chance agreement) on the words both judged."""
    words = [(a, b) for first, second in pairs for a, b in zip(first, second) if UNJUDGED not in (a, b)]
    if not words:
        return None
    observed = sum(a == b for a, b in words) / len(words)
    firsts, seconds = Counter(a for a, _ in words), Counter(b for _, b in words)
    chance = sum(firsts[tag] * seconds[tag] for tag in firsts) / len(words) ** 2
    return 1.0 if chance == 1 else (observed - chance) / (1 - chance)
