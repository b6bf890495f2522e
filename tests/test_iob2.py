"""The one IOB2 reader: entities as seqeval's strict IOB2 scheme finds them, types, labels and counts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from seqeval.scheme import IOB2, Entities

from xling.data.iob2 import continues, entities, entity_tags, entity_type, entity_types, labels_of, type_counts
from xling.data.schemes import to_iob2

TAGS = st.lists(st.sampled_from(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]), max_size=12)


def test_entities_types_labels_and_counts_of_a_known_sequence():
    tags = ["B-PER", "I-PER", "O", "I-LOC", "I-LOC", "B-LOC", "I-PER", "?"]
    assert entities(tags) == [("PER", 0, 2), ("LOC", 3, 5), ("LOC", 5, 6), ("PER", 6, 7)]
    assert entity_type("I-LOC") == "LOC" and entity_type("O") is None and entity_type("?") is None
    assert continues("I-PER", "B-PER") and not continues("I-PER", "I-LOC") and not continues("B-PER", "B-PER")
    assert entity_types(tags) == {"PER", "LOC"} and type_counts([tags, ["B-ORG"]]) == {"LOC": 2, "ORG": 1, "PER": 2}
    assert entity_tags("ORG", 3) == ["B-ORG", "I-ORG", "I-ORG"]
    assert labels_of({"PER", "LOC"}) == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


@given(TAGS)
def test_on_valid_iob2_the_entities_are_seqevals(raw):
    tags = to_iob2(raw)
    expected = [(e.tag, e.start, e.end) for e in Entities([tags], IOB2).entities[0]]
    assert entities(tags) == expected
