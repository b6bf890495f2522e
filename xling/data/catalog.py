"""The corpora catalogue (`corpora/catalog.toml` at the top of the repository, copied beside this file when the
package is built): corpora by name, where each is found, and the public source each comes from.

`corpus:wikiann-en/train` resolves to the first of: `$XLING_CORPORA/ner/wikiann-en/train` (a local copy),
the same path in xling's corpus cache (`~/.cache/xling/corpora`), and its public hub source, which the
first use fetches into that cache (`xling.data.fetch`, as `xling corpora get NAME` does).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from xling.data.silver import SPLITS as SILVER_SPLITS
from xling.data.silver import SilverSplits
from xling.data.token_rows import TokenRowSplits
from xling.errors import XlingError
from xling.options import opt
from xling.paths import cache_dir

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

PACKAGED = Path(__file__).with_name("catalog.toml")  # in an installed wheel
CATALOG = PACKAGED if PACKAGED.is_file() else Path(__file__).parents[2] / "corpora" / "catalog.toml"
PREFIX = "corpus:"  # corpus:NAME[/SPLIT], resolved by xling.data.fetch.resolve
FILES_PREFIX = "hf-files:"  # a dataset repository whose text files are the corpus
URLS = "urls"  # files fetched one by one from the addresses in `files`, each checked against its sha256
# catalogue split -> the hub dataset's split; `test` is never a catalogue split: it is read only to leave its
# sentences out of a corpus made from rows (TokenRowSplits.without_splits)
HUB_SPLITS = {"train": "train", "dev": "validation", "test": "test"}


@dataclass
class Corpus:
    name: str
    description: str
    kind: str
    local: str
    hub: str | None = None
    splits: list[str] = field(default_factory=list)
    source: str | None = None  # the public page: dataset card or paper
    licence: str | None = None
    revision: str | None = None  # what `hub` is pinned to
    unfetched: dict[str, str] = field(default_factory=dict)  # split -> where it comes from instead
    silver: SilverSplits | None = None  # silver-dev and silver-pool, made here from a split of silver data
    files: dict[str, dict[str, str]] = field(default_factory=dict)  # with hub "urls": name -> url and sha256
    rows: TokenRowSplits | None = None  # splits made from the token rows of `files` (xling.data.token_rows)

    def __post_init__(self):
        if isinstance(self.silver, dict):
            self.silver = SilverSplits(**self.silver)
        if isinstance(self.rows, dict):
            self.rows = TokenRowSplits(**self.rows)

    def made_from(self, split: str | None) -> str | None:
        """The split a split's sentences come from: silver-dev and silver-pool are made from the silver source."""
        return self.silver.source if self.silver and split in SILVER_SPLITS else split

    def public_source(self, split: str | None = None) -> str | None:
        return self.unfetched.get(self.made_from(split) or "") or self.source


def corpora_root() -> Path | None:
    root = os.environ.get("XLING_CORPORA")
    return Path(root).expanduser() if root else None


def corpus_cache() -> Path:
    """Where `xling corpora get` keeps fetched corpora, laid out as a local corpora root."""
    return cache_dir() / "corpora"


def load_catalog(path: Path = CATALOG) -> dict[str, Corpus]:
    if not path.is_file():
        raise XlingError(f"corpora catalogue not found at {path}")
    with open(path, "rb") as f:
        data = tomllib.load(f)
    return {name: Corpus(name=name, **entry) for name, entry in data.items()}


def local_path(corpus: Corpus, split: str | None) -> Path | None:
    """The corpus (or split) in the local corpora root, else in the cache; None when neither has it."""
    for root in (corpora_root(), corpus_cache()):
        if root is not None:
            path = root / corpus.local / split if split else root / corpus.local
            if path.exists():
                return path
    return None


def fetchable(corpus: Corpus, split: str | None) -> bool:
    """Whether the corpus (a split of labelled data, or a whole text corpus) has a hub source to fetch."""
    if not corpus.hub:
        return False
    if corpus.rows and split in corpus.splits:
        return True
    return split is None if corpus.hub.startswith(FILES_PREFIX) or corpus.hub == URLS else split in HUB_SPLITS


@dataclass
class CorpusRow:
    """A corpus as `xling corpora list` shows it: where it is here, its size, and where it comes from."""

    name: str
    kind: str
    description: str
    local: str | None  # the folder here, if any
    bytes: int
    hub: str | None
    revision: str | None
    source: str | None
    licence: str | None
    splits: list[str]
    here: list[str]  # the splits present here
    split_sources: dict[str, str | None]


def describe(catalog: dict[str, Corpus]) -> list[CorpusRow]:
    """Per corpus: where it is available here, its size, and where it comes from."""
    rows = []
    for corpus in catalog.values():
        path = local_path(corpus, None)
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path else 0
        rows.append(
            CorpusRow(
                name=corpus.name,
                kind=corpus.kind,
                description=corpus.description,
                local=str(path) if path else None,
                bytes=size,
                hub=corpus.hub,
                revision=corpus.revision,
                source=corpus.source,
                licence=corpus.licence,
                splits=corpus.splits,
                here=[s for s in corpus.splits if local_path(corpus, corpus.made_from(s))] if path else [],
                split_sources={s: corpus.public_source(s) for s in corpus.splits},
            )
        )
    return rows


@dataclass
class CorpusOptions:
    name: str = opt(help="A corpus of the catalogue, e.g. quechua-text or wikiann-qu.", argument=1)
