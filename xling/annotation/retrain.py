"""A retraining round of an annotation session: the task adapter trained again from the answers so far (from
the session's starting adapter, so rounds never drift), scored on dev, then the next batch selected with it.

`xling annotate` runs each round as a child process (`python -m xling.annotation.retrain DIR OPTIONS`), so
that the page stays quick while it trains and a failed round leaves the server running; its output goes to
`retrain.log` in the session folder.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

from xling.annotation.options import AnnotateOptions
from xling.annotation.session import ROUNDS_FILE, Session, append_jsonl
from xling.data.conll import UNJUDGED, Sentence, conll_text
from xling.errors import XlingError
from xling.fileio import write_text_atomic

# Few-shot settings that won over three seeds on 100 Quechua sentences (recipes/quality-qu.toml), with fewer
# epochs and patience so that a round stays short.
TRAINING = {"batch_size": 8, "lr": 1e-3, "patience": 5}
DEV_SHARE = 5  # without --dev, every fifth fully answered sentence is held out for dev


def adapter_name(session: Session, options: AnnotateOptions) -> str:
    return options.adapter or f"ner-{session.directory.name}-annotated"


def split_gold(gold: list[Sentence], dev: str | None) -> tuple[list[Sentence], list[Sentence] | str]:
    """Training sentences, and dev: `dev` if given, else every fifth sentence a person labelled whole."""
    if dev:
        return gold, dev
    complete = [i for i, s in enumerate(gold) if UNJUDGED not in s.tags]
    held_out = set(complete[DEV_SHARE - 1 :: DEV_SHARE])
    if not held_out:
        raise XlingError(
            f"no dev data: give --dev FILE, or label at least {DEV_SHARE} whole sentences (correct mode) first"
        )
    return [s for i, s in enumerate(gold) if i not in held_out], [gold[i] for i in sorted(held_out)]


def retraining_options(lang: str, train: str, dev: str, init_from: str, name: str, epochs: int, **more):
    """What a retraining round trains: the task adapter again from `init_from` on every answer so far, with the
    settings above (`more`: any other option, the model and workspace say)."""
    from xling.options import build
    from xling.train.config import TaskAdapterOptions

    values = {"task": "ner", "lang": lang, "train": train, "dev": dev, "init_from": init_from, "name": name}
    values |= {"overwrite": True, "restart": True, "epochs": epochs, **TRAINING, **more}
    return build(TaskAdapterOptions, values)


def retrain_round(directory: Path, options: AnnotateOptions) -> dict:
    """Train, score, select the next batch; the round's record, also appended to `rounds.jsonl`."""
    from xling.annotation.select import select
    from xling.train.task import train_task_adapter

    session = Session(directory)
    started = time.time()
    gold = session.gold()
    train, dev = split_gold(gold, options.dev)
    write_text_atomic(directory / "train.conll", conll_text(train))
    held_out = None if isinstance(dev, str) else len(dev)
    if held_out is not None:
        write_text_atomic(directory / "dev.conll", conll_text(dev))
        dev = str(directory / "dev.conll")
    name = adapter_name(session, options)
    where = {"model": session.options.model, "workspace": session.options.workspace}
    train_file, start = str(directory / "train.conll"), session.headers[0]["adapter"]
    report = train_task_adapter(
        retraining_options(session.options.lang, train_file, dev, start, name, options.epochs, **where)
    )
    progress = session.progress()
    record = {
        "round": len(session.rounds()) + 1,
        "sentences": progress["answered"],
        "words": progress["words"],
        "train_sentences": len(train),
        "dev": options.dev or f"{held_out} held-out answered sentences",
        "f1": report["best"]["f1"] if report.get("best") else None,
        "adapter": name,
        "seconds": round(time.time() - started, 1),
    }
    next_batch, size = select(replace(session.options, task_adapter=name))
    record |= {"next_batch": next_batch.name, "next_items": size, "total_seconds": round(time.time() - started, 1)}
    append_jsonl(directory / ROUNDS_FILE, record)
    return record


def command(directory: Path, options: AnnotateOptions) -> list[str]:
    return [sys.executable, "-m", "xling.annotation.retrain", str(directory), json.dumps(asdict(options))]


if __name__ == "__main__":
    from xling.options import from_record

    try:
        retrain_round(Path(sys.argv[1]), from_record(AnnotateOptions, json.loads(sys.argv[2]), "options"))
    except XlingError as err:  # the page shows the log's last line: one that says what to do
        sys.exit(f"error: {err}")
