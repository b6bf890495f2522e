"""The corpora catalogue (`corpora/catalog.toml`): corpora by name, found locally or on the hub.

`corpus:wikiann-en/train` resolves to `$XLING_CORPORA/ner/wikiann-en/train` when that
file exists, else to the named hub source `wikiann:en:train` (for users online).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from xling.errors import XlingError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

CATALOG = Path(__file__).resolve().parents[2] / "corpora" / "catalog.toml"
PREFIX = "corpus:"


@dataclass
class Corpus:
    name: str
    description: str
    kind: str
    local: str
    hub: str | None = None
    splits: list[str] = field(default_factory=list)


def corpora_root() -> Path | None:
    root = os.environ.get("XLING_CORPORA")
    return Path(root).expanduser() if root else None


def load_catalog(path: Path = CATALOG) -> dict[str, Corpus]:
    if not path.is_file():
        raise XlingError(f"corpora catalogue not found at {path}")
    with open(path, "rb") as f:
        data = tomllib.load(f)
    return {name: Corpus(name=name, **entry) for name, entry in data.items()}


def local_path(corpus: Corpus, split: str | None) -> Path | None:
    root = corpora_root()
    if root is None:
        return None
    path = root / corpus.local / split if split else root / corpus.local
    return path if path.exists() else None


def resolve(reference: str, catalog: dict[str, Corpus] | None = None) -> str:
    """`corpus:NAME[/SPLIT]` -> a local path or a hub source; any other string passes through."""
    if not reference.startswith(PREFIX):
        return reference
    catalog = catalog or load_catalog()
    name, _, split = reference[len(PREFIX) :].partition("/")
    if name not in catalog:
        raise XlingError(f"unknown corpus {name!r} in {reference!r}; known: {', '.join(sorted(catalog))}")
    corpus = catalog[name]
    if split and corpus.splits and split not in corpus.splits:
        raise XlingError(f"corpus {name} has no split {split!r} (splits: {', '.join(corpus.splits)})")
    path = local_path(corpus, split or None)
    if path is not None:
        return str(path)
    if corpus.hub and split:
        return f"{corpus.hub}:{split}"
    where = corpora_root() or "(XLING_CORPORA is not set)"
    raise XlingError(
        f"corpus {reference[len(PREFIX) :]} is not in the local corpora root {where}; "
        f"point XLING_CORPORA at a folder holding {corpus.local}/"
    )


def describe(catalog: dict[str, Corpus]) -> list[dict]:
    """Per corpus: where it is available here, and its size."""
    rows = []
    for corpus in catalog.values():
        path = local_path(corpus, None)
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path else 0
        rows.append(
            {
                "name": corpus.name,
                "kind": corpus.kind,
                "description": corpus.description,
                "local": str(path) if path else None,
                "bytes": size,
                "hub": corpus.hub,
                "splits": [s for s in corpus.splits if local_path(corpus, s)] if path else [],
            }
        )
    return rows
