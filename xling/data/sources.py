"""NER data by path (CoNLL files) or by name through `datasets` (for users online).

`wikiann:qu` is the Hugging Face WikiANN config `qu`; any token-classification dataset on the Hub is
`hf:NAME[:CONFIG[:SPLIT]]` (`hf:conll2003`, `hf:masakhane/masakhaner2:yor`, `hf:conll2003::test`), its tags
read from the dataset's label names. Tags are read as the scheme they are in, detected or given (IOB1, IOB2, IOE,
BIOES, BILUO, IO: `xling.data.schemes`), and brought to IOB2. A split is chosen by the caller (`train`,
`validation`/`dev`, `test`) unless spelled out. From Python, labelled data may also be in memory (`in_memory`): a
`datasets.Dataset` with tokens and tags, or a list of sentences, each `(tokens, tags)`, `{"tokens", "tags"}` or a
`Sentence`.
"""

from __future__ import annotations

from pathlib import Path

from xling.data.conll import Sentence, read_conll
from xling.data.fetch import resolve
from xling.data.fingerprints import sentences_digest
from xling.data.hub_datasets import SPLIT_ALIASES, hub_dataset, sentences_from_dataset
from xling.data.labels import relabel
from xling.data.schemes import data_in_iob2
from xling.errors import XlingError
from xling.given_data import DatasetLike, in_memory


def data_name(source) -> object:
    """What a run records of its data: a name as given; data in memory by what identifies it."""
    if not in_memory(source):
        return source
    if isinstance(source, DatasetLike):
        return f"datasets.Dataset {getattr(source, '_fingerprint', '?')} ({len(source):,} rows)"
    return f"{len(source):,} sentences in memory, digest {sentences_digest(_words(item) for item in source)}"


def _words(item) -> list[str]:
    """The words of a sentence given in memory, labelled (`sentences_in`'s shapes) or not (a list of words)."""
    tokens = item.tokens if isinstance(item, Sentence) else item.get("tokens") if isinstance(item, dict) else item
    return [str(t) for t in (tokens[0] if isinstance(tokens, tuple) and len(tokens) == 2 else tokens)]


def sentences_in(source, scheme: str = "auto") -> list[Sentence]:
    """Labelled sentences given in memory (`in_memory`), in IOB2 from `scheme`."""
    if isinstance(source, DatasetLike):
        return sentences_from_dataset(source, "the dataset", scheme)
    rows = []
    for number, item in enumerate(source, start=1):
        if isinstance(item, Sentence):
            tokens, tags = item.tokens, item.tags
        elif isinstance(item, dict):
            tokens, tags = item.get("tokens"), item.get("tags", item.get("ner_tags"))
        elif isinstance(item, list | tuple) and len(item) == 2:
            tokens, tags = item
        else:
            tokens = tags = None
        if not (_strings(tokens) and _strings(tags) and len(tokens) == len(tags)):
            raise XlingError(
                f"sentence {number}: give (tokens, tags), {{'tokens': [...], 'tags': [...]}} or a Sentence, with one "
                "tag (a string) per token"
            )
        rows.append((list(tokens), list(tags)))
    converted = data_in_iob2([tags for _, tags in rows], scheme, lambda s, _: f"sentence {s + 1}")
    return [Sentence(tokens, tags) for (tokens, _), tags in zip(rows, converted)]


def _strings(values) -> bool:
    return isinstance(values, list | tuple) and all(isinstance(v, str) for v in values)


def load_ner(source, split: str = "train", loader=None, scheme: str = "auto") -> list[Sentence]:
    """Sentences from a CoNLL file, a catalogue name (`corpus:wikiann-qu/dev`), a named hub dataset such as
    `wikiann:qu` or `hf:conll2003`, or data in memory, in IOB2 from `scheme`; none at all is an error."""
    if in_memory(source):
        sentences = sentences_in(source, scheme)
        source = "the data given"
    else:
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
