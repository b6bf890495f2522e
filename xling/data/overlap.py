"""`xling corpora overlap A B`: the sentences and entities two data sets share verbatim.

A data set is a CoNLL file, a text file (a sentence a line), a folder of such files, a catalogue name
(`corpus:wikiann-qu/dev`, `corpus:wikiann-qu` for all its files) or a hub dataset (`wikiann:qu`). Sentences
are compared by fingerprint (`xling.data.fingerprints`: spaces, case and Unicode form aside).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xling.data.conll import Sentence, looks_like_conll, read_conll, read_lines
from xling.data.fetch import MANIFEST, resolve
from xling.data.fingerprints import fingerprint, sentence_key
from xling.data.iob2 import entities
from xling.data.text import pieces
from xling.options import opt


def data_set(reference: str) -> list[Sentence]:
    """Every sentence of a data set; a text line is a sentence of whitespace-separated words, no tags."""
    path = Path(resolve(reference)).expanduser()
    if not path.exists():
        from xling.data.sources import load_ner

        return load_ner(reference, "validation")
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name != MANIFEST and not p.name.startswith("."))
    sentences = []
    for file in files if path.is_dir() else [path]:
        if looks_like_conll(file):
            sentences += read_conll(file)
        else:
            lines = pieces(line for _, line in read_lines(file))  # a long line in 10,000-character pieces
            sentences += [Sentence(line.split(), []) for line in lines if line.strip()]
    return sentences


def _mentions(sentence: Sentence) -> set[tuple[str, str]]:
    return {(kind, sentence_key(sentence.tokens[a:b])) for kind, a, b in entities(sentence.tags)}


def _side(sentences: list[Sentence], other: dict[str, Sentence]) -> dict:
    shared = [s for s in sentences if fingerprint(s.tokens) in other]
    labelled = [s for s in shared if s.tags and other[fingerprint(s.tokens)].tags]
    return {
        "sentences": len(sentences),
        "distinct": len({fingerprint(s.tokens) for s in sentences}),
        "entities": sum(len(entities(s.tags)) for s in sentences),
        "sentences_in_other": len(shared),
        "entities_in_other": sum(len(entities(s.tags)) for s in shared),
        "same_tags": sum(s.tags == other[fingerprint(s.tokens)].tags for s in labelled) if labelled else None,
    }


def overlap(a: str, b: str) -> dict:
    """What `a` and `b` share: distinct sentences, each side's sentences and entities found in the other (with
    repeats), how many of those carry the same tags, and the entity mentions (type and words) both hold."""
    first, second = data_set(a), data_set(b)
    by_print = [{fingerprint(s.tokens): s for s in side} for side in (first, second)]
    mentions = [set().union(*map(_mentions, side)) if side else set() for side in (first, second)]
    return {
        "a": {"data": a, **_side(first, by_print[1])},
        "b": {"data": b, **_side(second, by_print[0])},
        "shared_sentences": len(by_print[0].keys() & by_print[1].keys()),
        "shared_entity_mentions": len(mentions[0] & mentions[1]),
    }


@dataclass
class OverlapOptions:
    a: str = opt(
        help="A data set: a CoNLL or text file, a folder, corpus:NAME/SPLIT, corpus:NAME or wikiann:LANG.", argument=1
    )
    b: str = opt(help="Another data set, of any of the same kinds.", argument=2)
