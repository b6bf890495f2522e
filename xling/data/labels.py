"""Label sets: read from the data, with MISC dropped or types renamed to mix corpora."""

from __future__ import annotations

from xling.data.conll import UNJUDGED, Sentence
from xling.errors import XlingError

IGNORE = -100  # label of positions that carry no loss (cross-entropy's ignore_index, as in Hugging Face)


def parse_label_map(text: str | None) -> dict[str, str]:
    """`PERSON=PER,LOCATION=LOC` -> {"PERSON": "PER", "LOCATION": "LOC"} (entity types, not tags)."""
    if not text:
        return {}
    mapping = {}
    for pair in text.split(","):
        if "=" not in pair:
            raise XlingError(f"--label-map takes TYPE=TYPE pairs separated by commas, not {pair!r}")
        source, target = (p.strip() for p in pair.split("=", 1))
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
    types = sorted({t[2:] for s in sentences for t in s.tags if t not in ("O", UNJUDGED)})
    return ["O"] + [f"{p}-{t}" for t in types for p in ("B", "I")]
