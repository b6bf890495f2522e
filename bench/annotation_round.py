"""One retraining round of an annotation session as `xling annotate` runs it, on a large pool: 25 answers (the
labels of WikiANN-qu `silver-pool` sentences) train the task adapter again from `ner-en` with early stopping on
WikiANN-qu dev, it is scored beside the session's adapter, and the next 25 sentences are selected from the pool
(the first `--lines` lines of the Quechua text corpus) with `xling annotate`'s defaults. Writes
`results/annotation/round.json`: seconds for the round, its training and scoring part and its selection.

    python -m bench.annotation_round --workspace DIR [--lines 100000]

DIR holds `lang-qu`'s and `ner-en`'s adapters for the embedded model (as `recipes/quality-qu.toml` trains them;
without them, those shipped with xling); they are copied into a temporary workspace, which is all the round
writes to.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import REPO, corpora_root, parsed, quechua_lines
from xling import __version__
from xling.annotation.batches import BatchHeader, Item, start_session, write_batch
from xling.annotation.options import AnnotateOptions, SelectOptions
from xling.annotation.retrain import retrain_round
from xling.annotation.session import Session, session_dir
from xling.data.conll import read_conll
from xling.data.fetch import resolve
from xling.data.iob2 import entities
from xling.device import machine_name
from xling.models.loading import DEFAULT_MODEL
from xling.options import defaults
from xling.provenance import source_commit
from xling.roles import LANG, TASK
from xling.tagging.spec import TaggerSpec
from xling.tagging.words import joined
from xling.workspace import Workspace

ANSWERS = 25


def answered_session(workspace: Path, pool: Path) -> Path:
    """A session over `pool` whose first batch (silver-pool sentences) is answered with their labels."""
    options = SelectOptions(corpus=str(pool), tagger=TaggerSpec(lang="qu", workspace=str(workspace)))
    directory = session_dir(Workspace(str(workspace), options.tagger.model), "qu")
    start_session(directory, options)
    sentences = read_conll(resolve("corpus:wikiann-qu/silver-pool"))[:ANSWERS]
    items = []
    for number, sentence in enumerate(sentences):
        text, tokens = joined(sentence.tokens)
        words = [[t.start, t.end] for t in tokens]
        items.append(Item(f"s{number}", text, words, ["O"] * len(tokens), [0.5] * len(tokens), None, 0.5))
    header = BatchHeader("uncertainty", "correct", "ner-en", ["LOC", "ORG", "PER"], created=0, corpus=[str(pool)])
    write_batch(directory, header, items)
    session = Session(directory)
    for item, sentence in zip(items, sentences):
        spans = [{"start": start, "end": end, "label": kind} for kind, start, end in entities(sentence.tags)]
        session.record({"item": item.id, "spans": spans, "judged": None})
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", help="A workspace with lang-qu and ner-en trained (else the shipped ones).")
    parser.add_argument("--lines", type=int, default=100_000, help="Lines of the pool.")
    parser.add_argument("--epochs", type=int, default=defaults(AnnotateOptions).epochs, help="of the retraining")
    parser.add_argument("--out", default=str(REPO / "results" / "annotation" / "round.json"))
    smoke = Path(tempfile.gettempdir()) / "xling-smoke"
    args = parsed(parser, {"lines": 500, "epochs": 1, "out": str(smoke / "round.json")})
    trained = Workspace(args.workspace or str(Path(tempfile.mkdtemp()) / "no-adapters"), DEFAULT_MODEL)
    with tempfile.TemporaryDirectory() as folder:
        workspace = Workspace(folder, DEFAULT_MODEL)
        for role, found in ((LANG, trained.lang_adapter("qu")), (TASK, trained.task("ner-en"))):
            shutil.copytree(found, workspace.adapter_dir(role, found.name))  # its own, else the shipped one
        pool = Path(folder) / "pool.txt"
        pool.write_text("\n".join(quechua_lines()[: args.lines]) + "\n", encoding="utf-8")
        directory = answered_session(Path(folder), pool)
        dev = str(corpora_root() / "ner" / "wikiann-qu" / "dev")
        started = time.perf_counter()
        options = AnnotateOptions(session="qu", dev=dev, workspace=folder, epochs=args.epochs)
        record = retrain_round(directory, options)
        total = time.perf_counter() - started
    parts = {
        "round": total,
        "training and scoring": record.seconds,
        "selecting the next batch": record.total_seconds - record.seconds,
    }
    sample = defaults(AnnotateOptions).round_sample
    setup = (
        f"{ANSWERS} answers, a pool of {args.lines:,} lines, annotate's defaults (a round tags a sample of {sample:,})"
    )
    rows = [
        {"label": f"annotation round, {what}", "data": "corpus:quechua-text", "setup": setup, "metric": "seconds"}
        | {"seconds": round(seconds, 1), "seconds_std": 0.0, "per_seed": [{"seed": 1, "seconds": round(seconds, 1)}]}
        for what, seconds in parts.items()
    ]
    result = {"recipe": "annotation round, seconds", "seeds": [1], "model": DEFAULT_MODEL}
    result |= {"xling_version": __version__, "commit": source_commit(), "machine": machine_name(), "rows": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(parts | {"dev_f1": record.f1, "kept": record.kept}, indent=1))


if __name__ == "__main__":
    main()
