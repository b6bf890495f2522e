"""Fetching a catalogued corpus from its public source into xling's corpus cache, laid out as a local
corpora root: labelled splits through `datasets` (written as CoNLL files), text corpora as the text files
of a dataset repository, a corpus published as token rows made into its splits from the fetched files
(`xling.data.token_rows`). Each fetch is pinned to the catalogue's `revision` and leaves a `MANIFEST.json`
with the sha256 of every file; a later use checks the files against it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from xling.data.catalog import (
    FILES_PREFIX,
    HUB_SPLITS,
    PREFIX,
    URLS,
    Corpus,
    corpora_root,
    corpus_cache,
    fetchable,
    load_catalog,
    local_path,
)
from xling.data.conll import conll_text, read_conll
from xling.data.hub_datasets import hub_dataset, sentences_from_dataset
from xling.data.silver import SPLITS as SILVER_SPLITS
from xling.data.silver import write_silver
from xling.data.token_rows import write_token_row_splits
from xling.errors import XlingError
from xling.fileio import atomic_directory, file_sha256, read_json, write_text_atomic

MANIFEST = "MANIFEST.json"


class FetchError(XlingError):
    """A corpus's hub source did not give it (offline, refused, moved)."""


def fetch(corpus: Corpus, split: str | None = None, console: Console | None = None) -> Path:
    """The corpus (or split) in the cache, fetched from its hub source first if it is not there yet."""
    console = console or Console(stderr=True)
    folder = corpus_cache() / corpus.local
    target = folder / split if split else folder
    if not target.exists():
        where = f"{corpus.name}{'/' + split if split else ''}"
        console.print(f"fetching {where} from {corpus.hub} ({corpus.source})", highlight=False, soft_wrap=True)
        try:
            if corpus.rows and split is not None:
                _make_from_rows(corpus, folder, console)
            elif split is not None:
                _fetch_split(corpus, split, target)
            elif corpus.hub == URLS:
                _fetch_urls(corpus, folder, console)
            else:
                _fetch_files(corpus, folder, console)
        except XlingError:
            raise
        except Exception as err:  # offline, refused, moved: the hub clients raise their own types
            raise FetchError(
                f"cannot fetch corpus {corpus.name} from {corpus.hub} ({(str(err).splitlines() or [''])[0][:200]}); "
                f"online, `xling corpora get {corpus.name}` fetches it; offline, copy it to {corpus.local}/ under "
                "a folder named by XLING_CORPORA"
            ) from None
    check_manifest(folder)
    return target


def _fetch_split(corpus: Corpus, split: str, target: Path) -> None:
    dataset_id, config, _ = hub_dataset(f"{corpus.hub}:{HUB_SPLITS[split]}")
    from datasets import load_dataset

    dataset = load_dataset(dataset_id, config, split=HUB_SPLITS[split], revision=corpus.revision)
    sentences = sentences_from_dataset(dataset, corpus.hub)
    write_text_atomic(target, conll_text(sentences))
    _record(target.parent, [target])


def _make_from_rows(corpus: Corpus, folder: Path, console: Console) -> None:
    """Every split of a corpus made from token rows: its files fetched, the sentences of `without` left out."""
    spec, catalog = corpus.rows, load_catalog()
    sources = fetch(corpus, None, console)  # the token-row files, checked against the catalogue's sums
    without = []
    for split in spec.without_splits:
        try:
            without += read_conll(_held_split(catalog[spec.without], split, catalog))
        except XlingError as err:
            raise XlingError(f"{corpus.name} is made without the sentences of {spec.without}/{split}: {err}") from None
    made = write_token_row_splits(spec, [sources / name for name in corpus.files], without, folder, corpus.name)
    _record(folder, made)


def _held_split(corpus: Corpus, split: str, catalog: dict[str, Corpus]) -> Path:
    """A split of a catalogued corpus, the held-out test split too: that one is read only to leave its sentences
    out of another corpus (never a `corpus:` split, so nothing trains or scores on it)."""
    if split in corpus.splits:
        return Path(resolve(f"{PREFIX}{corpus.name}/{split}", catalog))
    return local_path(corpus, split) or fetch(corpus, split)


def _fetch_files(corpus: Corpus, folder: Path, console: Console) -> None:
    """The dataset repository's text files, one by one with a progress bar, written whole or not at all."""
    from huggingface_hub import HfApi, hf_hub_download

    repo_id = corpus.hub.removeprefix(FILES_PREFIX)
    entries = [
        e
        for e in HfApi().list_repo_tree(repo_id, repo_type="dataset", revision=corpus.revision, expand=True)
        if e.path.endswith(".txt")
    ]
    with atomic_directory(folder) as staging, Progress(console=console) as progress:
        bar = progress.add_task(f"{corpus.name}: {len(entries)} files", total=sum(e.size for e in entries))
        for entry in entries:
            file = Path(hf_hub_download(repo_id, entry.path, repo_type="dataset", revision=corpus.revision))
            expected = entry.lfs.sha256 if entry.lfs else None
            if expected and file_sha256(file) != expected:
                raise XlingError(f"{repo_id}/{entry.path}: its sha256 is not the one the hub lists; not using it")
            (staging / Path(entry.path).name).write_bytes(file.read_bytes())
            progress.advance(bar, entry.size)
        _record(staging, sorted(staging.iterdir()))


def _fetch_urls(corpus: Corpus, folder: Path, console: Console) -> None:
    """The catalogue's files from their addresses, each checked against its sha256, written whole or not at all."""
    from urllib.request import urlopen

    with atomic_directory(folder) as staging, Progress(console=console) as progress:
        bar = progress.add_task(f"{corpus.name}: {len(corpus.files)} files", total=len(corpus.files))
        for name, entry in corpus.files.items():
            with urlopen(entry["url"], timeout=60) as response:
                data = response.read()
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise XlingError(f"{entry['url']}: its sha256 is not the one the catalogue pins; not using it")
            (staging / name).write_bytes(data)
            progress.advance(bar)
        _record(staging, sorted(staging.iterdir()))


def _record(folder: Path, files: list[Path]) -> None:
    manifest = folder / MANIFEST
    sums = _sums(manifest) if manifest.is_file() else {}
    sums.update({f.name: file_sha256(f) for f in files})
    write_text_atomic(manifest, json.dumps(sums, indent=1, sort_keys=True) + "\n")


def _sums(manifest: Path) -> dict[str, str]:
    """A cached corpus's manifest: file name -> sha256."""
    sums = read_json(manifest)
    if not isinstance(sums, dict) or not all(isinstance(v, str) for v in sums.values()):
        raise XlingError(f"{manifest} is damaged; delete {manifest.parent} to fetch again")
    return sums


def check_manifest(folder: Path) -> None:
    """Every file the manifest names still has its sha256 (a cached corpus damaged since is named)."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return
    for name, expected in _sums(manifest).items():
        if not (folder / name).is_file() or file_sha256(folder / name) != expected:
            raise XlingError(
                f"{folder / name} is missing or changed since it was fetched; delete {folder} to fetch again"
            )


def fetch_all(corpus: Corpus, console: Console) -> list[Path]:
    """Every part of a corpus that has a hub source (`xling corpora get NAME`)."""
    if not corpus.hub:
        raise XlingError(f"corpus {corpus.name} has no hub source to fetch ({corpus.source or 'development only'})")
    if corpus.rows:
        return [fetch(corpus, split, console) for split in corpus.splits]
    if corpus.hub.startswith(FILES_PREFIX) or corpus.hub == URLS:
        return [fetch(corpus, None, console)]
    return [fetch(corpus, split, console) for split in corpus.splits if split in HUB_SPLITS]


def resolve(reference: str, catalog: dict[str, Corpus] | None = None, fetching: bool = True) -> str:
    """`corpus:NAME[/SPLIT]` -> a local path or a hub source; any other string passes through. Without
    `fetching`, a corpus that would be fetched (or made from fetched files) comes back as `reference` itself."""
    if not reference.startswith(PREFIX):
        return reference
    catalog = catalog or load_catalog()
    name, _, split = reference[len(PREFIX) :].partition("/")
    if name not in catalog:
        raise XlingError(f"unknown corpus {name!r} in {reference!r}; known: {', '.join(sorted(catalog))}")
    corpus = catalog[name]
    if split and corpus.splits and split not in corpus.splits:
        raise XlingError(f"corpus {name} has no split {split!r} (splits: {', '.join(corpus.splits)})")
    if corpus.silver and split in SILVER_SPLITS:
        return str(silver_split(corpus, split, catalog)) if fetching else reference
    path = local_path(corpus, split or None)
    if path is not None and path.is_relative_to(corpus_cache()):
        check_manifest(corpus_cache() / corpus.local)  # fetched once: still what was fetched
    if path is not None:
        return str(path)
    if fetchable(corpus, split or None):
        return str(fetch(corpus, split or None)) if fetching else reference
    raise XlingError(
        f"corpus {reference[len(PREFIX) :]} is not in the local corpora root "
        f"{corpora_root() or '(XLING_CORPORA is not set)'} nor in {corpus_cache()}, and has no hub source to fetch; "
        f"it comes from {corpus.public_source(split) or 'no public source'}: put it at {corpus.local}/ there"
    )


def silver_split(corpus: Corpus, split: str, catalog: dict[str, Corpus]) -> Path:
    """silver-dev or silver-pool of a corpus, made in the corpus cache from its silver and labelled splits."""
    spec = corpus.silver
    source = Path(resolve(f"{PREFIX}{corpus.name}/{spec.source}", catalog))
    labelled = [Path(resolve(f"{PREFIX}{corpus.name}/{other}", catalog)) for other in spec.without]
    folder = corpus_cache() / corpus.local
    folder.mkdir(parents=True, exist_ok=True)
    return write_silver(spec, source, labelled, folder, split)
