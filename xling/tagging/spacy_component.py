"""`nlp.add_pipe("xling_ner", config={...})`: xling's tagger as a spaCy component that sets `doc.ents`.

An optional extra (`pip install -e ".[spacy]"` from a clone); spaCy finds the factory through the `spacy_factories`
entry point. The config keys are `Tagger.load`'s arguments. Entities are xling's character spans on
`doc.text` (the same as `xling tag` and `Tagger` give), widened to whole spaCy tokens where the two
tokenisers cut a word differently.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator

from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import filter_spans

from xling.tagging.tagger import Tagger


class XlingNER:
    def __init__(self, tagger: Tagger, paragraphs: bool):
        self.tagger, self.paragraphs = tagger, paragraphs

    def __call__(self, doc: Doc) -> Doc:
        return next(self.pipe([doc]))

    def pipe(self, docs: Iterable[Doc], batch_size: int = 256) -> Iterator[Doc]:
        docs = iter(docs)
        while batch := [doc for _, doc in zip(range(batch_size), docs)]:
            for doc, tagged in zip(batch, self.tagger.tag_texts([doc.text for doc in batch], self.paragraphs)):
                spans = [doc.char_span(s.start, s.end, s.label, alignment_mode="expand") for s in tagged.spans]
                doc.ents = filter_spans([span for span in spans if span is not None])
                yield doc


def make_xling_ner(nlp: Language, name: str, paragraphs: bool = False, **load) -> XlingNER:
    return XlingNER(Tagger.load(**load), paragraphs)


# The config's keys, types and defaults are Tagger.load's (spaCy reads them from the signature): they cannot drift.
_own = list(inspect.signature(make_xling_ner).parameters.values())[:3]
_load = [p for name, p in inspect.signature(Tagger.load).parameters.items() if name != "cls"]
make_xling_ner.__signature__ = inspect.Signature(_own + [p.replace(kind=p.KEYWORD_ONLY) for p in _load])
Language.factory("xling_ner", func=make_xling_ner)
