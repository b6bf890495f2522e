"""A bilingual word lexicon for `xling translate`: lexicon files (SOURCE<TAB>TARGET a line) and entries learnt
from parallel text, in that order of trust.

From parallel text, a pair of one word on each side (a dictionary's headword and gloss, `claro.` / `ari.`) is an
entry as it stands; for the words no such pair gives, the target word that keeps the source word's company across
the sentence pairs most (the Dice coefficient of the pairs holding each, the oldest of word aligners) is taken
where it is shared often and exclusively enough. Words are compared casefolded.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from xling.data.conll import read_lines
from xling.data.text import parallel_files, read_parallel
from xling.errors import XlingError
from xling.tagging.words import tokenize

SUFFIX_MARK = "-"  # a target such as `-pi` is a suffix: it goes onto the entity that follows the word


@dataclass
class Lexicon:
    entries: dict[str, str] = field(default_factory=dict)  # casefolded source word -> target words ('' drops it)
    origins: Counter = field(default_factory=Counter)  # entries per origin: file, dictionary, co-occurrence

    def add(self, entries: dict[str, str], origin: str) -> None:
        """Add the entries for words not yet in the lexicon: what came first wins."""
        for source, target in entries.items():
            if source not in self.entries:
                self.entries[source] = target
                self.origins[origin] += 1

    def text(self) -> str:
        return "".join(f"{source}\t{target}\n" for source, target in self.entries.items())


def read_lexicon(path: Path) -> dict[str, str]:
    """SOURCE<TAB>TARGET lines (blank lines and `#` comments aside); the first entry of a word wins."""
    entries: dict[str, str] = {}
    for number, line in read_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        source, tab, target = line.partition("\t")
        if not tab or not source.strip() or "\t" in target:
            raise XlingError(f"{path}, line {number}: give SOURCE<TAB>TARGET, not {line[:60]!r}")
        entries.setdefault(source.strip().casefold(), " ".join(target.split()))
    return entries


def words_of(line: str) -> list[str]:
    """The words of a line that hold a letter, casefolded (punctuation and numbers aside)."""
    return [t.text.casefold() for t in tokenize(line) if any(c.isalpha() for c in t.text)]


def dictionary_entries(pairs: list[tuple[list[str], list[str]]]) -> dict[str, str]:
    """One word on each side: the gloss given most often for each headword."""
    glosses: dict[str, Counter] = {}
    for source, target in pairs:
        if len(source) == 1 and len(target) == 1:
            glosses.setdefault(source[0], Counter())[target[0]] += 1
    return {word: counts.most_common(1)[0][0] for word, counts in glosses.items()}


def cooccurrence_entries(pairs: list[tuple[list[str], list[str]]], min_pairs: int, min_dice: float) -> dict[str, str]:
    """Each source word's target word of highest Dice coefficient (2 * pairs with both / (pairs with the one +
    pairs with the other)), where they share at least `min_pairs` pairs and the coefficient reaches `min_dice`."""
    source_count, target_count, joint = Counter(), Counter(), Counter()
    for source, target in pairs:
        source_words, target_words = set(source), set(target)
        source_count.update(source_words)
        target_count.update(target_words)
        joint.update((s, t) for s in source_words for t in target_words)
    best: dict[str, tuple[float, str]] = {}
    for (s, t), both in joint.items():
        if both < min_pairs:
            continue
        dice = 2 * both / (source_count[s] + target_count[t])
        if dice >= min_dice and (dice, t) > best.get(s, (0.0, "")):
            best[s] = (dice, t)
    return {s: t for s, (_, t) in best.items()}


def build_lexicon(
    files: list[str], parallel: list[str], source_lang: str, lang: str, min_pairs: int, min_dice: float
) -> Lexicon:
    """The lexicon files' entries, then the parallel text's dictionary pairs, then its co-occurrences."""
    if not files and not parallel:
        raise XlingError("give a bilingual lexicon (--lexicon FILE) or parallel text to build one (--parallel)")
    lexicon = Lexicon()
    for file in files:
        lexicon.add(read_lexicon(Path(file)), "file")
    if parallel:
        pairs = [
            (words_of(a), words_of(b))
            for source, target in parallel_files(parallel, source_lang, lang)
            for a, b in read_parallel(source, target)
        ]
        lexicon.add(dictionary_entries(pairs), "dictionary")
        lexicon.add(cooccurrence_entries(pairs, min_pairs, min_dice), "co-occurrence")
    if not lexicon.entries:
        raise XlingError("the lexicon is empty: no entry in the files, and none learnt from the parallel text")
    return lexicon
