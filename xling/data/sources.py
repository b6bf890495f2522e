"""NER data by path (CoNLL files) or by name through `datasets` (for users online).

`wikiann:qu` is the Hugging Face WikiANN config `qu`; a split is chosen by the caller
(`train`, `validation`/`dev`, `test`), or spelled out as `wikiann:qu:validation`.
"""

from __future__ import annotations

from pathlib import Path

from xling.data.conll import Sentence, read_conll
from xling.errors import XlingError

HUB_DATASETS = {"wikiann": "unimelb-nlp/wikiann"}
SPLIT_ALIASES = {"dev": "validation"}


def sentences_from_dataset(dataset) -> list[Sentence]:
    """Rows with `tokens` and integer `ner_tags` (a ClassLabel feature naming the tags)."""
    names = dataset.features["ner_tags"].feature.names
    return [Sentence(list(row["tokens"]), [names[t] for t in row["ner_tags"]]) for row in dataset]


def load_ner(source: str, split: str = "train", loader=None) -> list[Sentence]:
    """Sentences from a CoNLL file, or from a named hub dataset such as `wikiann:qu`."""
    path = Path(source).expanduser()
    if path.exists():
        if path.is_dir():
            raise XlingError(f"{source} is a folder; give the CoNLL file itself (e.g. {source}/train)")
        return read_conll(path)
    name, _, rest = source.partition(":")
    if name not in HUB_DATASETS or not rest:
        raise XlingError(f"no such file: {source} (named sources: {', '.join(k + ':LANG' for k in HUB_DATASETS)})")
    config, _, explicit_split = rest.partition(":")
    split = SPLIT_ALIASES.get(explicit_split or split, explicit_split or split)
    if loader is None:
        from datasets import load_dataset as loader
    try:
        dataset = loader(HUB_DATASETS[name], config, split=split)
    except Exception as err:  # offline, unknown config, ...
        raise XlingError(f"cannot load {source} ({split}) through datasets: {str(err).splitlines()[0]}") from err
    return sentences_from_dataset(dataset)
