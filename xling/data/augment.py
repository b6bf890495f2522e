"""More training sentences from a few labelled ones (Dai and Adel 2020): each sentence again with its entity
mentions swapped for other mentions of the same type (mention replacement), then some words swapped for other
words that carry the same tag (label-wise token replacement), both drawn from the sentences given. Unjudged words
(`?`) are left as they are."""

from __future__ import annotations

import random

from xling.data.conll import Sentence
from xling.data.iob2 import entities, entity_tags
from xling.data.schemes import UNJUDGED

MENTION_SHARE = 0.5  # of a sentence's mentions swapped in each copy
WORD_SHARE = 0.3  # of its other words swapped for a word of the same tag


def augmented(sentences: list[Sentence], copies: int, seed: int) -> list[Sentence]:
    """`sentences`, then `copies` altered copies of each (a copy that came out unchanged is left out)."""
    rng = random.Random(seed)
    mentions: dict[str, list[list[str]]] = {}
    words: dict[str, list[str]] = {}
    for sentence in sentences:
        for kind, start, end in entities(sentence.tags):
            mentions.setdefault(kind, []).append(sentence.tokens[start:end])
        for token, tag in zip(sentence.tokens, sentence.tags):
            words.setdefault(tag, []).append(token)
    extra = []
    for sentence in sentences:
        for _ in range(copies):
            copy = _swap_words(_swap_mentions(sentence, mentions, rng), words, rng)
            if copy != sentence:
                extra.append(copy)
    return sentences + extra


def _swap_mentions(sentence: Sentence, mentions: dict[str, list[list[str]]], rng: random.Random) -> Sentence:
    tokens, tags, at = [], [], 0
    for kind, start, end in entities(sentence.tags):
        tokens += sentence.tokens[at:start]
        tags += sentence.tags[at:start]
        mention = rng.choice(mentions[kind]) if rng.random() < MENTION_SHARE else sentence.tokens[start:end]
        tokens += mention
        tags += entity_tags(kind, len(mention))
        at = end
    return Sentence(tokens + sentence.tokens[at:], tags + sentence.tags[at:])


def _swap_words(sentence: Sentence, words: dict[str, list[str]], rng: random.Random) -> Sentence:
    swapped = [
        rng.choice(words[tag]) if tag != UNJUDGED and tag in words and rng.random() < WORD_SHARE else token
        for token, tag in zip(sentence.tokens, sentence.tags)
    ]
    return Sentence(swapped, list(sentence.tags))
