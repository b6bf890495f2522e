"""Word alignment between a sentence and its translation, for carrying entity labels across.

Two signals, strongest first. Names written (nearly) the same on both sides: Quechua adds its suffixes to
them (`Lima` -> `Limapi`, `Perú` -> `Perúpa`), and accents come and go. Then, for the other words, the
encoder's contextual word vectors matched both ways: a pair is linked when each word is the other's most
similar word (SimAlign's ArgMax, Jalili Sabet et al. 2020), and only above a similarity floor.
"""

from __future__ import annotations

import unicodedata

import numpy as np

MIN_NAME = 3  # letters a name needs before its spelling is trusted as a link
NAME_SHARE = 0.8  # of a longer name's letters that a near-identical spelling shares from its start


def name_key(word: str, case: bool = False) -> str:
    """The word without accents, and without case unless `case` (`Perú` and `peru` are one key)."""
    decomposed = unicodedata.normalize("NFKD", word if case else word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def same_name(source: str, target: str) -> bool:
    """Whether `target` writes the name `source`: the same letters, the same with suffixes after them, or a
    near-identical spelling (most of the letters from the start)."""
    s, t = name_key(source), name_key(target)
    if len(s) < MIN_NAME or not s.isalpha():
        return False
    if t.startswith(s):
        return True
    shared = 0
    for a, b in zip(s, t):
        if a != b:
            break
        shared += 1
    return len(s) > MIN_NAME and shared >= NAME_SHARE * len(s)


def name_links(source: list[str], target: list[str], words: set[int]) -> set[tuple[int, int]]:
    """Links (source index, target index) for the source `words` whose spelling the target repeats; each
    target word takes the first source word that names it."""
    links, taken = set(), set()
    for i in sorted(words):
        for j, word in enumerate(target):
            if j not in taken and same_name(source[i], word):
                links.add((i, j))
                taken.add(j)
                break
    return links


def argmax_links(similarity: np.ndarray, floor: float) -> set[tuple[int, int]]:
    """Pairs that are each other's most similar word, at a cosine similarity of at least `floor`."""
    if similarity.size == 0:
        return set()
    best_target = similarity.argmax(axis=1)
    best_source = similarity.argmax(axis=0)
    return {(i, int(j)) for i, j in enumerate(best_target) if best_source[j] == i and similarity[i, j] >= floor}


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return a @ b.T
