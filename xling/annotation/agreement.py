"""Agreement between two people on the sentences both answered: entity-level F1 (one's entities scored against
the other's; the measure is symmetric) and Cohen's kappa on the tags of the words both judged, each with a 95%
bootstrap interval over the sentences (xling's bootstrap), and per entity type the entities each marked and those
both marked. Words either left unjudged (`?`, spans mode) count for neither."""

from __future__ import annotations

import numpy as np

from xling.data.iob2 import entity_type
from xling.data.schemes import UNJUDGED

Pair = tuple[list[str], list[str]]


def judged_by_both(first: list[str], second: list[str]) -> tuple[list[str], list[str]]:
    """The two tag sequences with every word one of them left unjudged set to O (kept for entity spans)."""
    both = [a != UNJUDGED and b != UNJUDGED for a, b in zip(first, second)]
    return [a if keep else "O" for a, keep in zip(first, both)], [b if keep else "O" for b, keep in zip(second, both)]


def _entity_counts(pairs: list[Pair], label: str | None = None) -> np.ndarray:
    """(sentences, 3): entities both marked, the second's, the first's (of one type, or all)."""
    from xling.scoring.bootstrap import sentence_counts

    firsts, seconds = zip(*(judged_by_both(a, b) for a, b in pairs))
    if label is not None:
        firsts, seconds = (
            [[t if entity_type(t) == label else "O" for t in s] for s in side] for side in (firsts, seconds)
        )
    return sentence_counts(list(firsts), list(seconds))


def entity_f1(pairs: list[Pair]) -> float | None:
    """2 × shared entities / (first's + second's), over all pairs; None without any entity."""
    if not pairs:
        return None
    shared, second, first = _entity_counts(pairs).sum(axis=0)
    return float(2 * shared / (first + second)) if first + second else None


def _confusions(pairs: list[Pair]) -> tuple[np.ndarray, list[str]]:
    """(sentences, tags, tags): how often the first gave a tag where the second gave another, per sentence."""
    tags = sorted({t for pair in pairs for side in pair for t in side} - {UNJUDGED})
    index = {tag: i for i, tag in enumerate(tags)}
    counts = np.zeros((len(pairs), len(tags), len(tags)))
    for n, (first, second) in enumerate(pairs):
        for a, b in zip(first, second):
            if UNJUDGED not in (a, b):
                counts[n, index[a], index[b]] += 1
    return counts, tags


def _kappa(confusion: np.ndarray) -> np.ndarray:
    """Cohen's kappa of (..., tags, tags) confusion counts: (observed - chance) / (1 - chance); NaN without words."""
    total = confusion.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.trace(confusion, axis1=-2, axis2=-1) / total
        chance = (confusion.sum(axis=-1) * confusion.sum(axis=-2)).sum(axis=-1) / total**2
        return np.where(chance == 1, 1.0, (observed - chance) / (1 - chance))


def cohens_kappa(pairs: list[Pair]) -> float | None:
    """Kappa on the words both judged; None without any."""
    if not pairs:
        return None
    confusion = _confusions(pairs)[0].sum(axis=0)
    return None if confusion.sum() == 0 else float(_kappa(confusion))


def report(pairs: list[Pair]) -> dict:
    """Everything the review shows of one pair of people: the sentences and words it rests on, entity F1 and
    kappa with 95% intervals, and per type the entities each marked, those both marked and their F1."""
    from xling.scoring.bootstrap import interval, percentile_interval, sentence_weights

    if not pairs:
        return {"sentences": 0, "words": 0, "entity_f1": None, "kappa": None, "per_type": {}}
    counts, confusions = _entity_counts(pairs), _confusions(pairs)[0]
    weights = sentence_weights(len(pairs))
    kappas = _kappa(np.einsum("bn,nij->bij", weights, confusions))
    kappa = cohens_kappa(pairs)
    per_type = {}
    for label in sorted({entity_type(t) for pair in pairs for side in pair for t in side} - {None}):
        shared, second, first = (int(v) for v in _entity_counts(pairs, label).sum(axis=0))
        f1_of_type = 2 * shared / (first + second) if first + second else None
        per_type[label] = {"first": first, "second": second, "both": shared, "f1": f1_of_type}
    f1 = entity_f1(pairs)
    return {
        "sentences": len(pairs),
        "words": int(confusions.sum()),
        "entity_f1": f1,
        "entity_f1_interval": list(interval(counts)) if f1 is not None else None,
        "kappa": kappa,
        "kappa_interval": list(percentile_interval(kappas[~np.isnan(kappas)])) if kappa is not None else None,
        "per_type": per_type,
    }
