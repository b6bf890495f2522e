"""Label sets: read from the data, with MISC dropped or types renamed to mix corpora."""

from __future__ import annotations

import re

from xling.data.conll import Sentence
from xling.data.iob2 import entity_types, labels_of
from xling.data.schemes import UNJUDGED
from xling.errors import XlingError
from xling.options import shown

IGNORE = -100  # label of positions that carry no loss (cross-entropy's ignore_index, as in Hugging Face)

ENTITY_TYPE = re.compile(r"[^\s<>&\"'`,=\x00-\x1f\x7f]+")  # as in LABEL, and no separator of --label-map
TAG_PREFIX = re.compile(r"[BIESLU]-")  # a tag's position marker (IOB, IOE, BIOES, BILUO), which no type begins with
# O, or B-/I- and an entity type without spaces, quotes, markup or control characters (labels reach pages and
# terminals)
LABEL = re.compile(r"^(O|[BI]-[^\s<>&\"'`\x00-\x1f\x7f]+)$")


MAX_LABELS = 1000
TASKS = ("ner",)  # the tasks a task adapter can learn


def check_labels(labels: list[str]) -> None:
    """A tagger's labels: O, B-TYPE or I-TYPE, each once, at most MAX_LABELS."""
    bad = [label for label in labels if not LABEL.match(label)]
    if bad or not labels:
        raise XlingError(f"labels must be O, B-TYPE or I-TYPE (TYPE without spaces, quotes or markup), not {bad[:3]}")
    if len(set(labels)) < len(labels) or len(labels) > MAX_LABELS:
        raise XlingError(
            f"labels must differ and be at most {MAX_LABELS}; got {len(labels)}, {len(set(labels))} distinct"
        )


def parse_label_map(text: str | None) -> dict[str, str]:
    """`PERSON=PER,LOCATION=LOC` -> {"PERSON": "PER", "LOCATION": "LOC"} (entity types, not tags)."""
    if not text:
        return {}
    mapping = {}
    for pair in text.split(","):
        if "=" not in pair:
            raise XlingError(f"--label-map takes TYPE=TYPE pairs separated by commas, not {pair!r}")
        source, target = (p.strip() for p in pair.split("=", 1))
        for kind in (source, target):
            if not ENTITY_TYPE.fullmatch(kind) or TAG_PREFIX.match(kind):
                raise XlingError(
                    f"--label-map renames entity types (PER, LOC), not tags or other text: {shown(kind)} in {pair!r}"
                )
        mapping[source] = target
    return mapping


def relabel(
    sentences: list[Sentence], drop: list[str] | None = None, mapping: dict[str, str] | None = None
) -> list[Sentence]:
    """Dropped types become O; mapped types are renamed (mapping to O drops them too)."""
    drop = set(drop or [])
    mapping = mapping or {}
    out = []
    for sentence in sentences:
        tags = []
        for tag in sentence.tags:
            if tag not in ("O", UNJUDGED):
                prefix, kind = tag[:2], mapping.get(tag[2:], tag[2:])
                tag = "O" if kind in drop or kind == "O" else prefix + kind
            tags.append(tag)
        out.append(Sentence(sentence.tokens, tags))
    return out


def label_list(sentences: list[Sentence]) -> list[str]:
    """O first, then B- and I- of each entity type, types sorted."""
    return labels_of(entity_types(tag for s in sentences for tag in s.tags))
