"""IOB2 tags, read and written in one place: `B-TYPE` begins an entity, `I-TYPE` continues one of the same type,
`O` is outside every entity (and `?`, `conll.UNJUDGED`, is a word nobody judged)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

OUTSIDE = "O"
BEGIN, INSIDE = "B-", "I-"


def entity_type(tag: str) -> str | None:
    """`PER` of B-PER or I-PER; None for O and unjudged words."""
    return tag[2:] if tag.startswith((BEGIN, INSIDE)) else None


def is_inside(tag: str) -> bool:
    return tag.startswith(INSIDE)


def continues(tag: str, previous: str) -> bool:
    """Whether `tag` continues the entity of the tag before it: I-X after B-X or I-X."""
    return is_inside(tag) and entity_type(previous) == tag[2:]


def entity_tags(kind: str, length: int) -> list[str]:
    """The tags of one entity of `length` words."""
    return [BEGIN + kind] + [INSIDE + kind] * (length - 1)


def entity_types(tags: Iterable[str]) -> set[str]:
    """The entity types the tags name."""
    return {kind for tag in tags if (kind := entity_type(tag))}


def labels_of(kinds: Iterable[str]) -> list[str]:
    """A tagger's labels for these entity types: O first, then B- and I- of each type, types sorted."""
    return [OUTSIDE] + [prefix + kind for kind in sorted(set(kinds)) for prefix in (BEGIN, INSIDE)]


def entities(tags: list[str]) -> list[tuple[str, int, int]]:
    """(type, first word, end) of each entity; an I- that continues no entity of its type starts one."""
    found: list[list] = []
    for i, tag in enumerate(tags):
        if i and found and found[-1][2] == i and continues(tag, tags[i - 1]):
            found[-1][2] = i + 1
        elif kind := entity_type(tag):
            found.append([kind, i, i + 1])
    return [tuple(entity) for entity in found]


def type_counts(tag_lists: Iterable[list[str]]) -> dict[str, int]:
    """Entities per type, types sorted."""
    counts = Counter(kind for tags in tag_lists for kind, _, _ in entities(tags))
    return dict(sorted(counts.items()))
