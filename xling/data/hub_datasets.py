"""Labelled data on the Hugging Face Hub, read through `datasets`: `wikiann:LANG[:SPLIT]` is the WikiANN config
`LANG`; any token-classification dataset is `hf:NAME[:CONFIG[:SPLIT]]`, its tags read from the dataset's label
names and brought to IOB2 (from IOB1, BIOES or IO)."""

from __future__ import annotations

from pathlib import Path

from xling.data.conll import Sentence
from xling.data.schemes import data_in_iob2
from xling.errors import XlingError

HUB_DATASETS = {"wikiann": "unimelb-nlp/wikiann"}
HF_PREFIX = "hf:"
SPLIT_ALIASES = {"dev": "validation"}
TOKEN_COLUMNS = ("tokens", "words")
TAG_COLUMNS = ("ner_tags", "ner", "tags", "labels", "ner_labels")


def _tag_names(feature) -> list[str] | None:
    """The label names of a sequence-of-class-labels column; [] for a sequence of strings; None otherwise."""
    inner = getattr(feature, "feature", None)
    if getattr(inner, "names", None):
        return list(inner.names)
    return [] if getattr(inner, "dtype", None) == "string" else None


def sentences_from_dataset(dataset, source: str = "the dataset", scheme: str = "auto") -> list[Sentence]:
    """Rows with a token column and a tag column (class labels naming the tags, or tag strings), in IOB2: read as
    `scheme`, or as the scheme of the label names (of the tags, for strings)."""
    features = dataset.features
    tokens = next((c for c in TOKEN_COLUMNS if c in features), None)
    tags = next((c for c in TAG_COLUMNS if c in features and _tag_names(features[c]) is not None), None)
    if tokens is None or tags is None:
        raise XlingError(
            f"{source} has no token column ({', '.join(TOKEN_COLUMNS)}) with a tag column ({', '.join(TAG_COLUMNS)}) "
            f"of class labels or strings; its columns: {', '.join(features)}"
        )
    names = _tag_names(features[tags])
    rows = [(list(row[tokens]), [names[t] for t in row[tags]] if names else list(row[tags])) for row in dataset]
    converted = data_in_iob2([tags for _, tags in rows], scheme, lambda s, _: f"{source}, row {s + 1}", names)
    return [Sentence(words, tags) for (words, _), tags in zip(rows, converted)]


def hub_dataset(source: str) -> tuple[str, str | None, str]:
    """(dataset id, config, split) of `wikiann:LANG[:SPLIT]` or `hf:NAME[:CONFIG[:SPLIT]]`."""
    if source.startswith(HF_PREFIX):
        name, config, split = (source[len(HF_PREFIX) :].split(":") + ["", ""])[:3]
        if name:
            return name, config or None, split
    name, _, rest = source.partition(":")
    if name in HUB_DATASETS and rest:
        config, _, split = rest.partition(":")
        return HUB_DATASETS[name], config, split
    known = ", ".join([k + ":LANG" for k in HUB_DATASETS] + ["hf:NAME[:CONFIG[:SPLIT]]"])
    raise XlingError(f"no such file: {source} (named sources: {known})")


def hub_dataset_id(source: str) -> str | None:
    """The Hub dataset a source names (`wikiann:qu` -> unimelb-nlp/wikiann), or None for a file."""
    try:
        return None if Path(source).expanduser().exists() else hub_dataset(source)[0]
    except XlingError:
        return None
