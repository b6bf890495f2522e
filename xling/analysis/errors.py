"""Where a tagger's entities go wrong, measured on labelled data. Each predicted entity is right, of the wrong
type (the same words as a gold entity), of the wrong span (the same type, overlapping words), wrong in both, or
spurious (no gold entity overlaps it); each gold entity that no prediction overlaps is missed: the classes of
SemEval-2013 task 9.1 (and the `nervaluate` package). Also the confusion of types over overlapping pairs, and the
words a wrong span leaves out of a gold entity or takes in beside it, which show a target language's span
conventions (`distritu`, `pruwinsya` after a Quechua place name) that a source-language tagger never learnt.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from seqeval.metrics.sequence_labeling import get_entities

from xling.data.conll import Sentence
from xling.data.sources import load_scored
from xling.given_data import LabelledData
from xling.tagging.tagger import Tagger

KINDS = ("right", "wrong type", "wrong span", "wrong type and span", "spurious", "missed")
NONE = "none"  # the row or column of the confusion for no entity on that side
EXAMPLES = 5  # kept for each kind
EDGE_WORDS = 20  # the commonest words left out or taken in, kept


@dataclass
class Errors:
    kinds: dict[str, int]  # entities of each class (`KINDS`)
    types: list[str]  # the confusion's rows and columns, `none` last
    confusion: list[list[int]]  # gold rows, tagged columns
    left_out: list[tuple[str, int]]  # the commonest words a wrong span leaves out, with their counts
    taken_in: list[tuple[str, int]]  # and takes in
    examples: dict[str, list[str]]  # of each class but right
    sentences: int = 0
    decoder: str | None = None
    data: str | None = None  # what it was measured on (`reports`)
    lang: str | None = None
    setup: str | None = None
    json: str | None = None  # where its numbers were written


def overlaps(a: tuple, b: tuple) -> int:
    """Words two entities (type, first, last) share."""
    return max(0, min(a[2], b[2]) - max(a[1], b[1]) + 1)


def kind_of(predicted: tuple, gold: list[tuple]) -> tuple[str, tuple | None]:
    """The class of a predicted entity and the gold entity it is judged against (the most overlapping)."""
    touching = sorted((g for g in gold if overlaps(predicted, g)), key=lambda g: -overlaps(predicted, g))
    if not touching:
        return "spurious", None
    if predicted in touching:
        return "right", predicted
    same_words = [g for g in touching if g[1:] == predicted[1:]]
    if same_words:
        return "wrong type", same_words[0]
    same_type = [g for g in touching if g[0] == predicted[0]]
    return ("wrong span", same_type[0]) if same_type else ("wrong type and span", touching[0])


def count_errors(sentences: list[Sentence], predictions: list[list[str]]) -> Errors:
    """Counts of each class, the confusion of types (gold rows, predicted columns), edge words and examples."""
    kinds, confusion, left_out, taken_in = Counter(), Counter(), Counter(), Counter()
    examples: dict[str, list[str]] = {kind: [] for kind in KINDS[1:]}
    for sentence, tags in zip(sentences, predictions):
        gold, predicted, words = get_entities(sentence.tags), get_entities(tags), sentence.tokens
        judged = set()
        for entity in predicted:
            kind, against = kind_of(entity, gold)
            kinds[kind] += 1
            confusion[(against[0] if against else NONE, entity[0])] += 1
            judged.add(against)
            if kind == "wrong span":
                in_gold, in_predicted = set(range(against[1], against[2] + 1)), set(range(entity[1], entity[2] + 1))
                left_out.update(words[i].lower() for i in in_gold - in_predicted)
                taken_in.update(words[i].lower() for i in in_predicted - in_gold)
            if kind != "right" and len(examples[kind]) < EXAMPLES:
                examples[kind].append(shown(words, entity, against))
        for entity in gold:
            if entity not in judged and not any(overlaps(entity, p) for p in predicted):
                kinds["missed"] += 1
                confusion[(entity[0], NONE)] += 1
                if len(examples["missed"]) < EXAMPLES:
                    examples["missed"].append(shown(words, None, entity))
    types = sorted({t for pair in confusion for t in pair} - {NONE}) + [NONE]
    return Errors(
        kinds={kind: kinds[kind] for kind in KINDS},
        types=types,
        confusion=[[confusion[(g, p)] for p in types] for g in types],
        left_out=left_out.most_common(EDGE_WORDS),
        taken_in=taken_in.most_common(EDGE_WORDS),
        examples=examples,
        sentences=len(sentences),
    )


def shown(words: list[str], predicted: tuple | None, gold: tuple | None) -> str:
    """`tagged [A B](LOC), gold [A B C](ORG)`: the words of each side with its type."""

    def side(entity):
        return f"[{' '.join(words[entity[1] : entity[2] + 1])}]({entity[0]})" if entity else "nothing"

    return f"tagged {side(predicted)}, gold {side(gold)}"


def tagger_errors(tagger: Tagger, data: LabelledData, limit: int | None = None) -> Errors:
    sentences = load_scored(data, limit)
    tagged = tagger.tag_words([s.tokens for s in sentences])
    return count_errors(sentences, [[tag for tag, _ in words] for words in tagged])
