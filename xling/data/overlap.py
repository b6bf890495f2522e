"""`xling corpora overlap A B`: the sentences and entities two data sets share verbatim.

A data set is a CoNLL file, a text file (a sentence a line), a folder of such files, a catalogue name
(`corpus:wikiann-qu/dev`, `corpus:wikiann-qu` for all its files) or a hub dataset (`wikiann:qu`). Sentences
are compared by fingerprint (`xling.data.fingerprints`: spaces, case and Unicode form aside).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from xling.data.conll import Sentence, looks_like_conll, read_conll, read_lines
from xling.data.fetch import MANIFEST, resolve
from xling.data.fingerprints import fingerprint, sentence_key
from xling.data.iob2 import entities
from xling.data.text import pieces
from xling.options import opt


def sentences_of(reference: str) -> Iterator[Sentence]:
    """Every sentence of a data set, read as a stream; a text line is a sentence of whitespace-separated words, no
    tags (a long line in 10,000-character pieces)."""
    path = Path(resolve(reference)).expanduser()
    if not path.exists():
        from xling.data.sources import load_ner

        yield from load_ner(reference, "validation")
        return
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name != MANIFEST and not p.name.startswith("."))
    for file in files if path.is_dir() else [path]:
        if looks_like_conll(file):
            yield from read_conll(file)
        else:
            lines = pieces(line for _, line in read_lines(file))
            yield from (Sentence(line.split(), []) for line in lines if line.strip())


@dataclass
class _Side:
    """What overlap keeps of one data set, whatever its size: per distinct sentence (its fingerprint) how often it
    comes, its entities over those times, how often each tagging comes, and the last tagging; and the mentions."""

    sentences: int = 0
    entities: int = 0
    counts: dict = field(default_factory=dict)  # fingerprint -> [times, entities, Counter of taggings]
    last: dict = field(default_factory=dict)  # fingerprint -> the tags it came with last
    mentions: set = field(default_factory=set)

    @classmethod
    def of(cls, sentences: Iterable[Sentence]) -> _Side:
        side = cls()
        for sentence in sentences:
            key, found = fingerprint(sentence.tokens), len(entities(sentence.tags))
            side.sentences, side.entities = side.sentences + 1, side.entities + found
            times, entity_count, taggings = side.counts.setdefault(key, [0, 0, Counter()])
            side.counts[key][:2] = times + 1, entity_count + found
            taggings[tuple(sentence.tags)] += 1
            side.last[key] = tuple(sentence.tags)
            side.mentions |= {(kind, sentence_key(sentence.tokens[a:b])) for kind, a, b in entities(sentence.tags)}
        return side

    def against(self, other: _Side, data: str) -> OverlapSide:
        shared = [key for key in self.counts if key in other.last]
        labelled = [
            (key, tags, n) for key in shared if other.last[key] for tags, n in self.counts[key][2].items() if tags
        ]
        return OverlapSide(
            data=data,
            sentences=self.sentences,
            distinct=len(self.counts),
            entities=self.entities,
            sentences_in_other=sum(self.counts[key][0] for key in shared),
            entities_in_other=sum(self.counts[key][1] for key in shared),
            same_tags=sum(n for key, tags, n in labelled if tags == other.last[key]) if labelled else None,
        )


@dataclass
class OverlapSide:
    """One data set's side of an overlap: its sentences and entities, and those found in the other."""

    data: str
    sentences: int
    distinct: int
    entities: int
    sentences_in_other: int
    entities_in_other: int
    same_tags: int | None  # of its shared sentences, those tagged as in the other (None: neither is tagged)


@dataclass
class Overlap:
    a: OverlapSide
    b: OverlapSide
    shared_sentences: int
    shared_entity_mentions: int  # type and words


def overlap(a: str, b: str) -> Overlap:
    """What `a` and `b` share: distinct sentences, each side's sentences and entities found in the other (with
    repeats), how many of those carry the same tags, and the entity mentions (type and words) both hold. Each
    data set is read as a stream and kept as counts per distinct sentence."""
    first, second = _Side.of(sentences_of(a)), _Side.of(sentences_of(b))
    return Overlap(
        a=first.against(second, a),
        b=second.against(first, b),
        shared_sentences=len(first.counts.keys() & second.counts.keys()),
        shared_entity_mentions=len(first.mentions & second.mentions),
    )


@dataclass
class OverlapOptions:
    a: str = opt(
        help="A data set: a CoNLL or text file, a folder, corpus:NAME/SPLIT, corpus:NAME or wikiann:LANG.", argument=1
    )
    b: str = opt(help="Another data set, of any of the same kinds.", argument=2)
