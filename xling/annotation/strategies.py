"""How much a label would help: each strategy scores a tagged sentence (higher: ask first).

- `random`: a hash of the seed and the text, the same on every run; needs no model.
- `uncertainty`: one minus the probability of the best IOB2 sequence per word (Shen et al. 2017's MNLP:
  the length-normalised log probability, turned into a probability so that it reads 0-1).
- `entity`: the least confident span the model proposes (Chaudhary et al. 2019): an entity it tags (its
  confidence: the mean probability of its tags), or a run of words it tags `O` without conviction (the
  probability of `O` below `DOUBT`), which may be an entity it missed.

Plain functions of the tags and their probabilities (`xling.tagging.tagger.TaggedText`), so that they can be
checked on hand-built numbers.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from xling.data.iob2 import OUTSIDE, entities, entity_types

MODES = ("correct", "spans")
DOUBT = 0.75  # a word tagged O with P(O) below this may belong to an entity the model missed


@dataclass
class ProposedSpan:
    """Words `start` to `end` (exclusive): an entity of `label` the model tags, or a doubtful `O` run
    (`label` None) that may be one."""

    start: int
    end: int
    label: str | None
    confidence: float

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "label": self.label, "confidence": round(self.confidence, 4)}


@dataclass(order=True)
class Candidate:
    """A sentence as the strategies see it; `order=True` ranks by `score`, then `key` (ties alike each run)."""

    score: float
    key: str
    text: str = field(compare=False)
    words: list[tuple[int, int]] = field(compare=False, default_factory=list)  # character offsets
    tags: list[str] = field(compare=False, default_factory=list)
    probabilities: list[float] = field(compare=False, default_factory=list)
    focus: ProposedSpan | None = field(compare=False, default=None)  # the span to ask about (spans mode)


def entity_spans(tags: list[str], probabilities: list[float]) -> list[ProposedSpan]:
    """The entities of IOB2 tags and the doubtful `O` runs between them, each with its confidence."""
    spans = [ProposedSpan(a, b, kind, _mean(probabilities[a:b])) for kind, a, b in entities(tags)]
    doubt = None
    for i, (tag, p) in enumerate(zip([*tags, None], [*probabilities, 1.0])):
        if tag == OUTSIDE and p < DOUBT:
            doubt = i if doubt is None else doubt
        elif doubt is not None:
            spans.append(ProposedSpan(doubt, i, None, _mean(probabilities[doubt:i])))
            doubt = None
    return sorted(spans, key=lambda s: s.start)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def sequence_uncertainty(probabilities: list[float]) -> float:
    """1 - exp(mean log p): 0 when the model is sure of every word, towards 1 as it doubts."""
    if not probabilities:
        return 0.0
    return 1.0 - math.exp(sum(math.log(max(p, 1e-12)) for p in probabilities) / len(probabilities))


def random_score(seed: int, text: str) -> float:
    digest = hashlib.blake2b(f"{seed}\n{text}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


# A strategy's score of a candidate (higher: ask first) and the span to ask about, given the spans the model
# proposes (none before the model has run) and the seed.
Rating = Callable[[Candidate, list[ProposedSpan], int], tuple[float, ProposedSpan | None]]


@dataclass(frozen=True)
class Strategy:
    name: str
    rate: Rating
    reads_model: bool = True  # False: it ranks the text alone, and the model tags only the pool it keeps


STRATEGIES: dict[str, Strategy] = {}


def register(strategy: Strategy) -> Strategy:
    """Make `strategy` a choice of `xling select --strategy` and of recipes."""
    STRATEGIES[strategy.name] = strategy
    return strategy


def _least_sure(spans: list[ProposedSpan]) -> ProposedSpan | None:
    return min(spans, key=lambda s: (s.confidence, s.start), default=None)


def _random(candidate: Candidate, spans: list[ProposedSpan], seed: int):
    focus = min(spans, key=lambda s: random_score(seed, f"{s.start}\n{candidate.text}"), default=None)
    return random_score(seed, candidate.text), focus


def _uncertainty(candidate: Candidate, spans: list[ProposedSpan], seed: int):
    return sequence_uncertainty(candidate.probabilities), _least_sure(spans)


def _entity(candidate: Candidate, spans: list[ProposedSpan], seed: int):
    least_sure = _least_sure(spans)
    return (1.0 - least_sure.confidence if least_sure else 0.0), least_sure


register(Strategy("random", _random, reads_model=False))
register(Strategy("uncertainty", _uncertainty))
register(Strategy("entity", _entity))


def rate(candidate: Candidate, strategy: str, mode: str, seed: int) -> Candidate:
    """`candidate` with its score (and, in spans mode or for `entity`, the span to ask about)."""
    spans = entity_spans(candidate.tags, candidate.probabilities)
    candidate.score, candidate.focus = STRATEGIES[strategy].rate(candidate, spans, seed)
    if mode == "spans" and candidate.focus is None:
        candidate.score = -1.0  # nothing to ask about: last
    return candidate


class Best:
    """The `size` highest-scoring candidates of a stream, in constant memory."""

    def __init__(self, size: int):
        self.size, self.heap = size, []

    def offer(self, candidate: Candidate) -> None:
        if len(self.heap) < self.size:
            heapq.heappush(self.heap, candidate)
        elif candidate > self.heap[0]:
            heapq.heapreplace(self.heap, candidate)

    def ranked(self) -> list[Candidate]:
        return sorted(self.heap, reverse=True)


def types_of(candidate: Candidate, mode: str) -> set[str]:
    """The predicted types a candidate counts towards for the cap: its focus span's in spans mode."""
    if mode == "spans":
        return {candidate.focus.label or "?"} if candidate.focus else set()
    return entity_types(candidate.tags)


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.casefold().split())


def near_duplicate(a: frozenset[str], b: frozenset[str], threshold: float = 0.7) -> bool:
    """Jaccard similarity of the sets of words at least `threshold`."""
    return bool(a or b) and len(a & b) / len(a | b) >= threshold


def pick(ranked: list[Candidate], size: int, per_type_cap: int, mode: str) -> list[Candidate]:
    """The best candidates, best first, skipping near-duplicates of one already picked and, while others are
    left, candidates whose predicted type already has `per_type_cap` in the batch."""
    picked: list[Candidate] = []
    seen: list[frozenset[str]] = []
    per_type: Counter[str] = Counter()
    for capped in (True, False):  # the cap gives way when it alone leaves the batch short
        for candidate in ranked:
            if len(picked) == size:
                break
            words, types = word_set(candidate.text), types_of(candidate, mode)
            if any(c is candidate for c in picked) or any(near_duplicate(words, s) for s in seen):
                continue
            if capped and any(per_type[t] >= per_type_cap for t in types):
                continue
            picked.append(candidate)
            seen.append(words)
            per_type.update(types)
    return sorted(picked, key=lambda c: -c.score)  # best first (stable: ties keep the order they were picked)
