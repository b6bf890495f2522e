"""How far a tagger's probabilities can be trusted, measured on labelled data.

Per entity type, the share of predicted entities that are right (same type and words as a gold entity) at each
level of confidence; and the share of words tagged O that lie inside a gold entity, by their probability. An
entity's confidence is the least probability of its words, the figure `self-train --threshold` compares, so the
curves show which threshold keeps pseudo-labels right, and how often a kept O is a missed entity.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from seqeval.metrics.sequence_labeling import get_entities

from xling.data.conll import Sentence
from xling.data.sources import load_scored
from xling.given_data import LabelledData
from xling.tagging.tagger import Tagger

BINS = 10  # confidence bins of 0.1: [0, 0.1), ..., [0.9, 1]


@dataclass
class Confidence:
    bins: list[float]  # each bin's lower bound
    entities: dict[str, list[list[int]]]  # per type, [right, predicted] per bin
    o_words: list[list[int]]  # [inside a gold entity, tagged O] per bin
    sentences: int = 0
    data: str | None = None  # what it was measured on (`reports`)
    lang: str | None = None
    setup: str | None = None
    json: str | None = None  # where its numbers were written


def bin_of(probability: float) -> int:
    return min(int(probability * BINS), BINS - 1)


def count_by_confidence(sentences: list[Sentence], tagged: list[list[tuple[str, float]]]) -> Confidence:
    """Right and predicted entities of each type, and words tagged O inside a gold entity, by probability."""
    entities: defaultdict[str, list[list[int]]] = defaultdict(lambda: [[0, 0] for _ in range(BINS)])
    o_words = [[0, 0] for _ in range(BINS)]
    for sentence, words in zip(sentences, tagged):
        gold = set(get_entities(sentence.tags))
        for kind, first, last in get_entities([tag for tag, _ in words]):  # last word included
            cell = entities[kind][bin_of(min(p for _, p in words[first : last + 1]))]
            cell[0] += (kind, first, last) in gold
            cell[1] += 1
        for (tag, probability), gold_tag in zip(words, sentence.tags):
            if tag == "O":
                cell = o_words[bin_of(probability)]
                cell[0] += gold_tag != "O"
                cell[1] += 1
    return Confidence([i / BINS for i in range(BINS)], dict(sorted(entities.items())), o_words, len(sentences))


def tagger_confidence(tagger: Tagger, data: LabelledData, limit: int | None = None) -> Confidence:
    sentences = load_scored(data, limit)
    return count_by_confidence(sentences, tagger.tag_words([s.tokens for s in sentences]))
