"""Corpora from their public sources: fetched into the cache on first use (stand-ins for the hub here), checked
against the sums recorded then, and a public source for every corpus that xling's own pages and recipes use."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.tiny import run_xling
from xling.data.catalog import load_catalog
from xling.data.fetch import resolve
from xling.errors import XlingError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_local_corpora(tmp_path, monkeypatch):
    monkeypatch.delenv("XLING_CORPORA", raising=False)
    monkeypatch.setenv("XLING_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / "corpora"


def test_a_text_corpus_is_fetched_on_first_use_then_checked(no_local_corpora, tmp_path, monkeypatch):
    import huggingface_hub

    from xling.fileio import file_sha256 as sha256

    served = tmp_path / "hub"
    served.mkdir()
    (served / "a.txt").write_text("Qusqu llaqta\n")
    (served / "b.txt").write_text("Lima Perú suyupi\n")
    files = {name: served / name for name in ("a.txt", "b.txt")}
    lfs = {"a.txt": SimpleNamespace(sha256=sha256(files["a.txt"])), "b.txt": None}  # b: a plain git file
    asked = []

    class Api:
        def list_repo_tree(self, repo_id, repo_type, revision, expand):
            asked.append((repo_id, repo_type, revision))
            tree = [SimpleNamespace(path=n, size=f.stat().st_size, lfs=lfs[n]) for n, f in files.items()]
            return tree + [SimpleNamespace(path="README.md", size=5, lfs=None)]

    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda repo_id, path, repo_type, revision: str(files[path]))
    folder = resolve("corpus:quechua-text")
    corpus = load_catalog()["quechua-text"]
    assert asked == [("Llamacha/monolingual-quechua-iic", "dataset", corpus.revision)]
    assert folder == str(no_local_corpora / "text" / "qu")
    assert sorted(p.name for p in Path(folder).iterdir()) == ["MANIFEST.json", "a.txt", "b.txt"]
    assert resolve("corpus:quechua-text") == folder and len(asked) == 1  # cached: not fetched again
    (Path(folder) / "a.txt").write_text("changed\n")
    with pytest.raises(XlingError, match="a.txt is missing or changed since it was fetched"):
        resolve("corpus:quechua-text")


def test_a_file_whose_sum_is_not_the_hubs_is_not_used(no_local_corpora, tmp_path, monkeypatch):
    import huggingface_hub

    (tmp_path / "a.txt").write_text("Qusqu\n")
    entry = SimpleNamespace(path="a.txt", size=6, lfs=SimpleNamespace(sha256="0" * 64))
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda: SimpleNamespace(list_repo_tree=lambda *a, **k: [entry]))
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda *a, **k: str(tmp_path / "a.txt"))
    with pytest.raises(XlingError, match="its sha256 is not the one the hub lists"):
        resolve("corpus:quechua-text")
    assert not (no_local_corpora / "text" / "qu").exists()


def test_a_labelled_split_is_fetched_through_datasets_as_conll(no_local_corpora, monkeypatch):
    import datasets

    from xling.data.sources import load_ner

    calls = []

    def load_dataset(dataset_id, config, split, revision):
        calls.append((dataset_id, config, split, revision))
        features = datasets.Features(
            {
                "tokens": datasets.Sequence(datasets.Value("string")),
                "ner_tags": datasets.Sequence(datasets.ClassLabel(names=["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])),
            }
        )
        return datasets.Dataset.from_dict({"tokens": [["Juan", "Lima"]], "ner_tags": [[1, 3]]}, features=features)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    assert load_ner("corpus:conll2002-es/dev")[0].tags == ["B-PER", "B-LOC"]
    assert calls == [("eriktks/conll2002", "es", "validation", "refs/convert/parquet")]
    assert (no_local_corpora / "ner" / "conll2002-es" / "dev").read_text() == "Juan\tB-PER\nLima\tB-LOC\n\n"


def test_offline_fetching_is_one_line_saying_what_to_do(tmp_path):
    run = run_xling("corpora", "get", "quechua-text", env={"XLING_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 2, run.stderr  # what it fetches, then the one error line
    assert lines[1].startswith("error: cannot fetch corpus quechua-text") and "XLING_CORPORA" in lines[1]


def corpora_used() -> set[str]:
    """Every corpus name that the README, the docs, the demo and the shipped recipes train or score on."""
    texts = [p.read_text(encoding="utf-8") for p in [ROOT / "README.md", ROOT / "xling" / "demo.py"]]
    texts += [p.read_text(encoding="utf-8") for p in (ROOT / "recipes").glob("*.toml")]
    texts += [p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md")]
    return {name for text in texts for name in re.findall(r"corpus:([a-z0-9-]+)", text)} - {"NAME"}


def test_every_corpus_xling_uses_has_a_public_source_in_the_listing():
    run = run_xling("corpora", "list", "--json", env={"XLING_CORPORA": ""})
    listed = {row["name"]: row for row in json.loads(run.stdout)}
    used = corpora_used()
    assert {"quechua-text", "wikiann-en", "wikiann-qu"} <= used <= set(listed)
    for name in used:
        row = listed[name]
        assert row["source"].startswith("https://") and row["licence"], name
        assert all(source.startswith("https://") for source in row["split_sources"].values()), name
        assert row["hub"], name  # fetchable: by `xling corpora get` or on first use


def test_a_parallel_corpus_is_fetched_file_by_file_and_checked_against_the_catalogue(no_local_corpora, monkeypatch):
    import hashlib
    import io
    import urllib.request

    corpus = load_catalog()["americasnlp-es-qu"]
    served = {entry["url"]: f"line of {name}\n".encode() for name, entry in corpus.files.items()}
    catalog = load_catalog()
    catalog[corpus.name].files = {
        name: {**entry, "sha256": hashlib.sha256(served[entry["url"]]).hexdigest()}
        for name, entry in corpus.files.items()
    }  # the stand-in's files pinned as the real ones are
    monkeypatch.setattr("xling.data.fetch.load_catalog", lambda: catalog)
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: io.BytesIO(served[url]))
    folder = Path(resolve("corpus:americasnlp-es-qu"))
    assert folder == no_local_corpora / "parallel" / "americasnlp-es-qu"
    assert sorted(p.name for p in folder.iterdir()) == sorted([*corpus.files, "MANIFEST.json"])
    assert (folder / "dev.qu").read_bytes() == served[corpus.files["dev.qu"]["url"]]


def test_a_parallel_file_whose_sum_is_not_the_catalogues_is_not_used(no_local_corpora, monkeypatch):
    import io
    import urllib.request

    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: io.BytesIO(b"not what was pinned\n"))
    with pytest.raises(XlingError, match="its sha256 is not the one the catalogue pins"):
        resolve("corpus:americasnlp-es-qu")
    assert not (no_local_corpora / "parallel" / "americasnlp-es-qu").exists()


def _row_files(sentences: list[tuple[int, list[str], list[str]]]) -> dict[str, bytes]:
    """Sentences (id, words, tags) as QuBERT publishes them: one word a row, rows shuffled across two CSV files."""
    import csv
    import io
    import random

    rows = [
        (index, sid, word, tag)
        for sid, words, tags in sentences
        for index, (word, tag) in enumerate(zip(words, tags), start=sid * 100)
    ]
    random.Random(0).shuffle(rows)
    files = {}
    for name, part in (("train_qu_ner.csv", rows[::2]), ("test_qu_ner.csv", rows[1::2])):
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([["", "sentence_id", "words", "labels"], *part])
        files[name] = out.getvalue().encode()
    return files


def _serve_rows(files: dict[str, bytes], monkeypatch):
    """The catalogue's qubert-qu with its two files served by a stand-in and pinned as the real ones are."""
    import hashlib
    import io
    import urllib.request

    catalog = load_catalog()
    corpus = catalog["qubert-qu"]
    corpus.files = {
        name: {**entry, "sha256": hashlib.sha256(files[name]).hexdigest()} for name, entry in corpus.files.items()
    }
    served = {entry["url"]: files[name] for name, entry in corpus.files.items()}
    monkeypatch.setattr("xling.data.fetch.load_catalog", lambda: catalog)
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: io.BytesIO(served[url]))
    return corpus


def _raw_sentences(path: Path) -> list[tuple[list[str], list[str]]]:
    """A CoNLL file's words exactly as written (some of QuBERT's end in a space, which reading for training drops)."""
    blocks = [block.splitlines() for block in path.read_text(encoding="utf-8").split("\n\n") if block.strip()]
    return [([line.split("\t")[0] for line in b], [line.split("\t")[1] for line in b]) for b in blocks]


def test_qubert_qu_is_made_from_its_token_rows_byte_for_byte(corpora_root, tmp_path, monkeypatch):
    """Rows made from the development copy's dev and train, shuffled, with what the rule must undo (a sentence of
    WikiANN-qu's train and of its test split, a repeat, a sentence of the part kept aside, entities opened with
    I-), give back files with the sha256 the corpora README states."""
    import hashlib

    from xling.data.conll import read_conll
    from xling.data.token_rows import share

    readme = (corpora_root / "README.md").read_text(encoding="utf-8")
    stated = dict(re.findall(r"`(dev|train)` ([0-9a-f]{64})", readme))
    kept = [_raw_sentences(corpora_root / "ner" / "qubert-qu" / split) for split in ("dev", "train")]
    sentences = [(2 * i + side, words, tags) for side, part in enumerate(kept) for i, (words, tags) in enumerate(part)]
    opened_with_i = [
        (sid, words, [t.replace("B-", "I-") if i == 0 else t for i, t in enumerate(tags)])
        for sid, words, tags in sentences
    ]
    wikiann = read_conll(corpora_root / "ner" / "wikiann-qu" / "train")[0]
    aside = next([f"ayllu{n}"] for n in range(100) if share([f"ayllu{n}"]) < 0.35)
    held_out = ["Mayu", "llaqtapi", "kachkan"]
    sid, words, tags = sentences[5]
    extra = [
        (1, wikiann.tokens, wikiann.tags),
        (3, held_out, ["B-LOC", "O", "O"]),
        (sid + 10**6, words, tags),
        (7, aside, ["O"]),
    ]
    root = tmp_path / "root"
    (root / "ner" / "wikiann-qu").mkdir(parents=True)
    for split in ("train", "dev", "extra"):
        (root / "ner" / "wikiann-qu" / split).write_bytes((corpora_root / "ner" / "wikiann-qu" / split).read_bytes())
    (root / "ner" / "wikiann-qu" / "test").write_text("".join(f"{w}\tO\n" for w in held_out) + "\n")
    monkeypatch.setenv("XLING_CORPORA", str(root))
    monkeypatch.setenv("XLING_HOME", str(tmp_path / "home"))
    _serve_rows(_row_files([(s + 10, w, t) for s, w, t in opened_with_i] + extra), monkeypatch)

    made = {split: Path(resolve(f"corpus:qubert-qu/{split}")) for split in ("dev", "train")}

    assert made["dev"].parent == tmp_path / "home" / "corpora" / "ner" / "qubert-qu"
    assert {split: hashlib.sha256(path.read_bytes()).hexdigest() for split, path in made.items()} == stated
    assert sorted(p.name for p in made["dev"].parent.iterdir()) == sorted(
        ["MANIFEST.json", "dev", "train", "test_qu_ner.csv", "train_qu_ner.csv"]
    )
    assert Path(resolve("corpus:qubert-qu/train")) == made["train"]  # made once, then read from the cache


def test_a_corpus_made_from_rows_is_refused_whole_when_it_is_not_the_pinned_one(no_local_corpora, monkeypatch):
    """Rows that do not make the pinned files, WikiANN-qu out of reach, a CSV of other columns: one line each, and
    no split written."""
    files = _row_files([(1, ["Qusqu", "llaqta"], ["B-LOC", "O"])])
    _serve_rows(files, monkeypatch)
    monkeypatch.setattr("xling.data.fetch._held_split", lambda corpus, split, catalog: Path(os.devnull))
    with pytest.raises(XlingError, match=r"^qubert-qu/dev made from train_qu_ner.csv, test_qu_ner.csv has sha256"):
        resolve("corpus:qubert-qu/dev")
    folder = no_local_corpora / "ner" / "qubert-qu"
    assert not (folder / "dev").exists() and not (folder / "train").exists()

    monkeypatch.undo()
    monkeypatch.delenv("XLING_CORPORA", raising=False)
    monkeypatch.setenv("XLING_HOME", str(no_local_corpora.parent))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _serve_rows(files, monkeypatch)
    with pytest.raises(XlingError, match=r"^qubert-qu is made without the sentences of wikiann-qu/train: cannot"):
        resolve("corpus:qubert-qu/train")


def test_token_rows_of_other_columns_are_one_line(tmp_path):
    from xling.data.token_rows import read_token_rows

    bad = tmp_path / "rows.csv"
    bad.write_text(",id,token,tag\n0,1,Qusqu,B-LOC\n")
    with pytest.raises(XlingError, match=r"rows.csv: expected the columns \(index\), sentence_id, words, labels"):
        read_token_rows([bad])
    bad.write_text(",sentence_id,words,labels\n0,one,Qusqu,B-LOC\n")
    with pytest.raises(XlingError, match=r"rows.csv:2: expected an index, a sentence id, a word and a tag"):
        read_token_rows([bad])
