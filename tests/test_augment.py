"""Training sentences multiplied from a few answers (`xling annotate --augment`): mentions swapped for mentions of
the same type, words for words of the same tag, unjudged words untouched, the same copies for the same seed."""

from __future__ import annotations

from xling.data.augment import augmented
from xling.data.conll import Sentence
from xling.data.iob2 import entities

ANSWERS = [
    Sentence("Juan Pérez Limapi tiyan .".split(), ["B-PER", "I-PER", "B-LOC", "O", "O"]),
    Sentence("Rosa Qusqumanta hamun .".split(), ["B-PER", "B-LOC", "O", "O"]),
    Sentence("Banco Central wasipi llamkan ?".split(), ["B-ORG", "I-ORG", "O", "O", "?"]),
]


def test_copies_keep_valid_tags_and_draw_only_what_the_answers_hold():
    more = augmented(ANSWERS, copies=5, seed=1)
    assert more[:3] == ANSWERS and 3 < len(more) <= 18
    mentions = {(kind, tuple(s.tokens[a:b])) for s in ANSWERS for kind, a, b in entities(s.tags)}
    words = {(t, tag) for s in ANSWERS for t, tag in zip(s.tokens, s.tags)}
    for copy in more[3:]:
        assert len(copy.tokens) == len(copy.tags)
        for kind, start, end in entities(copy.tags):
            words_of = tuple(copy.tokens[start:end])
            # a whole mention of that type, or one whose words were swapped for words of the same tags
            assert (kind, words_of) in mentions or all((t, g) in words for t, g in zip(words_of, copy.tags[start:end]))
        assert all((t, g) in words for t, g in zip(copy.tokens, copy.tags))
    assert any(copy.tokens != s.tokens for copy in more[3:] for s in ANSWERS)


def test_unjudged_words_stay_and_the_same_seed_gives_the_same_copies():
    more = augmented(ANSWERS, copies=10, seed=7)
    for copy in more[3:]:
        if "?" in copy.tags:
            assert copy.tokens[-1] == "?" and copy.tags[-1] == "?"
    assert augmented(ANSWERS, copies=10, seed=7) == more and augmented(ANSWERS, copies=10, seed=8) != more
    assert augmented(ANSWERS, copies=0, seed=7) == ANSWERS
