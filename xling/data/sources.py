"""NER data by path (CoNLL files) or by name through `datasets` (for users online).

`wikiann:qu` is the Hugging Face WikiANN config `qu`; any token-classification dataset on the Hub is
`hf:NAME[:CONFIG[:SPLIT]]` (`hf:conll2003`, `hf:masakhane/masakhaner2:yor`, `hf:conll2003::test`), its tags
read from the dataset's label names. Tags are read as the scheme they are in, detected or given (IOB1, IOB2, IOE,
BIOES, BILUO, IO: `xling.data.schemes`), and brought to IOB2. A split is chosen by the caller (`train`,
`validation`/`dev`, `test`) unless spelled out.
"""

from __future__ import annotations

from pathlib import Path

from xling.data.conll import Sentence, read_conll
from xling.data.fetch import resolve
from xling.data.hub_datasets import SPLIT_ALIASES, hub_dataset, sentences_from_dataset
from xling.data.labels import relabel
from xling.errors import XlingError


def load_ner(source: str, split: str = "train", loader=None, scheme: str = "auto") -> list[Sentence]:
    """Sentences from a CoNLL file, a catalogue name (`corpus:wikiann-qu/dev`), or a named hub dataset such as
    `wikiann:qu` or `hf:conll2003`, in IOB2 from `scheme`; none at all is an error."""
    sentences = _load_ner(resolve(source), split, loader, scheme)
    if not sentences:
        raise XlingError(f"{source} holds no labelled sentences (a token and a tag per line, blank lines between)")
    return sentences


def load_scored(
    source: str,
    limit: int | None = None,
    drop: list[str] | None = None,
    mapping: dict[str, str] | None = None,
    scheme: str = "auto",
) -> list[Sentence]:
    """Labelled data as scoring reads it: the validation split, types dropped or renamed, its first `limit`."""
    return relabel(load_ner(source, "validation", scheme=scheme), drop, mapping)[:limit]


def _load_ner(source: str, split: str, loader, scheme: str) -> list[Sentence]:
    path = Path(source).expanduser()
    if path.exists():
        if path.is_dir():
            raise XlingError(f"{source} is a folder; give the CoNLL file itself (e.g. {source}/train)")
        return read_conll(path, scheme)
    dataset_id, config, explicit_split = hub_dataset(source)
    split = SPLIT_ALIASES.get(explicit_split or split, explicit_split or split)
    if loader is None:
        from datasets import load_dataset as loader
    try:
        dataset = loader(dataset_id, config, split=split)
    except Exception as err:  # offline, unknown config, ...
        raise XlingError(f"cannot load {source} ({split}) through datasets: {str(err).splitlines()[0]}") from err
    return sentences_from_dataset(dataset, source, scheme)
