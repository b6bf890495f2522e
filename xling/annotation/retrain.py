"""A retraining round of an annotation session: the task adapter trained again from the answers so far (from
the session's starting adapter, so rounds never drift), scored on dev beside the session's adapter (the best so
far), which it replaces only if it scores at least as well; then the next batch is selected with the better one.

`xling annotate` runs each round as a child process (`python -m xling.annotation.retrain DIR OPTIONS`), so
that the page stays quick while it trains and a failed round leaves the server running; its output goes to
`retrain.log` in the session folder.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path

from xling.annotation.options import AnnotateOptions
from xling.annotation.rounds import ROUNDS_FILE, FailedRound, Round, ran
from xling.annotation.session import Session
from xling.data.augment import augmented
from xling.data.conll import Sentence, conll_text
from xling.data.schemes import UNJUDGED
from xling.errors import XlingError
from xling.fileio import EntryLock, append_jsonl, atomic_directory, write_text_atomic
from xling.roles import TASK
from xling.workspace import Workspace

# Few-shot settings that won over three seeds on 100 Quechua sentences (recipes/quality-qu.toml), with fewer
# epochs and patience so that a round stays short.
TRAINING = {"batch_size": 8, "lr": 1e-3, "patience": 5}
DEV_SHARE = 5  # without --dev, every fifth fully answered sentence is held out for dev
HEADROOM = 10  # sentences left to a person when a round starts early, so that it ends before they run out
CHOOSE_FILE, JUDGE_FILE = "dev-choose.conll", "dev-judge.conll"  # the halves of dev: the epoch, keep-or-drop


def adapter_name(session: Session, options: AnnotateOptions) -> str:
    return options.adapter or f"ner-{session.directory.name}-annotated"


def split_gold(gold: list[Sentence], dev: str | None) -> tuple[list[Sentence], list[Sentence], list[Sentence]]:
    """Training sentences, and dev in two halves: the one the candidate chooses its epoch on, and the one that
    judges keep-or-drop, which that choice never saw. Dev is `dev`'s sentences if given, else every fifth
    sentence a person labelled whole."""
    from xling.data.sources import load_ner

    if dev:
        train, held_out = gold, load_ner(dev, "validation")
    else:
        complete = [i for i, s in enumerate(gold) if UNJUDGED not in s.tags]
        chosen = set(complete[DEV_SHARE - 1 :: DEV_SHARE])
        train, held_out = [s for i, s in enumerate(gold) if i not in chosen], [gold[i] for i in sorted(chosen)]
    if len(held_out) < 2:
        raise XlingError(
            f"no dev data: give --dev FILE, or label at least {2 * DEV_SHARE} whole sentences (correct mode) first"
        )
    return train, held_out[0::2], held_out[1::2]


def retraining_options(lang: str, train: str, dev: str, init_from: str, name: str, epochs: int, **more):
    """What a retraining round trains: the task adapter again from `init_from` on every answer so far, with the
    settings above (`more`: any other option, the model and workspace say)."""
    from xling.options import build
    from xling.train.config import TaskAdapterOptions

    values = {"task": "ner", "lang": lang, "train": train, "dev": dev, "init_from": init_from, "name": name}
    values |= {"overwrite": True, "restart": True, "epochs": epochs, **TRAINING, **more}
    return build(TaskAdapterOptions, values)


ROUND_LOCK = "round"  # <session>/round.lock, held by the process running a round (a restarted server waits on it)
CANDIDATE_SUFFIX = "-candidate"  # a round trains here; the session's adapter is replaced only by a better one


def retrain_round(directory: Path, options: AnnotateOptions) -> Round:
    """Train, score against the session's adapter on the same dev, keep the better, select the next batch; the
    round's record, also appended to `rounds.jsonl` (after round 0, the starting adapter, on the first round)."""
    busy = "a retraining round of this session is already running (pid {holder})"
    lock = EntryLock(directory / ROUND_LOCK, "round", busy=busy)
    try:
        return _round(Session(directory), options)
    finally:
        lock.release()


def _round(session: Session, options: AnnotateOptions) -> Round:
    from xling.annotation.select import select
    from xling.train.task import train_task_adapter

    started, directory = time.time(), session.directory
    train, choose, judge = split_gold(session.gold(), options.dev)
    taught = augmented(train, options.augment, seed=len(train))
    for file, sentences in (("train.conll", taught), (CHOOSE_FILE, choose), (JUDGE_FILE, judge)):
        write_text_atomic(directory / file, conll_text(sentences))
    choose_file, judge_file = str(directory / CHOOSE_FILE), str(directory / JUDGE_FILE)
    spec = session.options.tagger
    where = {"model": spec.model, "workspace": spec.workspace}
    name, start = adapter_name(session, options), session.headers[0].adapter
    workspace = Workspace(spec.workspace, spec.model)
    incumbent = name if workspace.adapter_dir(TASK, name).is_dir() else start
    train_task_adapter(
        retraining_options(
            spec.lang,
            str(directory / "train.conll"),
            choose_file,
            start,
            name + CANDIDATE_SUFFIX,
            options.epochs,
            **where,
        )
    )
    f1, best_f1 = (_dev_f1(session, judge_file, adapter) for adapter in (name + CANDIDATE_SUFFIX, incumbent))
    kept = f1 > best_f1  # only a gain: on a small dev set a tie says nothing for the new adapter
    _settle(workspace, name, kept)
    rounds, progress = ran(session.rounds()), session.progress()
    dev_label = f"{len(judge)} sentences of " + (options.dev or "the held-out answers") + " no epoch was chosen on"
    if not rounds:  # round 0: where the session started, on the first round's dev
        start_round = Round(0, sentences=0, words=0, f1=best_f1, adapter=start, dev=dev_label)
        append_jsonl(directory / ROUNDS_FILE, start_round.to_record())
    record = Round(
        round=rounds[-1].round + 1 if rounds else 1,
        sentences=progress.answered,
        words=progress.words,
        train_sentences=len(train),
        dev=dev_label,
        f1=f1,
        previous_f1=best_f1,
        kept=kept,
        adapter=name if kept else incumbent,
        seconds=round(time.time() - started, 1),
    )
    sample = min(filter(None, (session.options.max_sentences, options.round_sample)))
    chosen_by = replace(spec, task_adapter=record.adapter)
    next_batch, size = select(replace(session.options, tagger=chosen_by, max_sentences=sample))
    record = replace(record, next_batch=next_batch.name, next_items=size, total_seconds=round(time.time() - started, 1))
    append_jsonl(directory / ROUNDS_FILE, record.to_record())
    return record


def _dev_f1(session: Session, dev: str, adapter: str) -> float:
    from xling.tagging.evaluate import EvaluationOptions, evaluate

    return evaluate(EvaluationOptions(dev, replace(session.options.tagger, task_adapter=adapter))).f1


def _settle(workspace: Workspace, name: str, kept: bool) -> None:
    """The candidate becomes the session's adapter under its own name (replacing it whole or not at all), or is
    removed."""
    candidate = workspace.adapter_dir(TASK, name + CANDIDATE_SUFFIX)
    if kept:
        with atomic_directory(workspace.adapter_dir(TASK, name), overwrite=True, replaces=("task.json",)) as staging:
            shutil.copytree(candidate, staging, dirs_exist_ok=True)
            for record in [*staging.glob("*.json"), *staging.glob("*.md")]:  # its configs, report and card
                text = record.read_text(encoding="utf-8")
                record.write_text(text.replace(candidate.name, name), encoding="utf-8")
    shutil.rmtree(candidate)


class Retrainer:
    """Starts a retraining round once enough new answers have come, one round at a time: a round still running
    from before a restart (it holds the session's round lock) is waited for, not started again."""

    def __init__(self, session: Session, options: AnnotateOptions):
        from xling.data.sources import load_ner

        if options.retrain and options.dev:
            load_ner(options.dev, "validation")  # a missing or damaged --dev is said at start, not at the first round
        self.session, self.options = session, options
        self.process: subprocess.Popen | None = None
        self.started: float | None = None
        self.adopted = False
        self.lock = threading.Lock()

    @property
    def running(self) -> bool:
        if self.process is not None and self.process.poll() is None:
            return True
        held = EntryLock.holder(self.session.directory / ROUND_LOCK) is not None
        if held and not self.adopted:  # started by a server before this one
            self.adopted, self.started = True, (self.session.directory / f"{ROUND_LOCK}.lock").stat().st_mtime
        elif self.adopted and not held:
            self.adopted = False
            self.session.load_batches()  # its batch joins the queue
        return held

    def maybe_start(self, left: int | None = None) -> None:
        """After an answer: a round once `retrain_every` new answers have come, or earlier, once the person has
        at most HEADROOM sentences `left` (and dev data can be had), so that the next batch is ready before they
        run out; never again early after a failed round, which waits for new answers."""
        if not self.options.retrain or not self.options.retrain_every:
            return
        with self.lock:
            answered, logged = self.session.progress().answered, self.session.rounds()
            # counted from the last round, or the last failed one: that is tried again only after new answers
            new = answered - (logged[-1].sentences if logged else 0)
            failed = bool(logged) and isinstance(logged[-1], FailedRound)
            enough_dev = bool(self.options.dev) or answered >= 2 * DEV_SHARE
            early = left is not None and left <= HEADROOM and new > 0 and enough_dev and not failed
            if self.running or not (new >= self.options.retrain_every or early):
                return
            log = open(self.session.directory / "retrain.log", "ab")
            self.process = subprocess.Popen(
                command(self.session.directory, self.options), stdout=log, stderr=subprocess.STDOUT
            )
            self.started = time.time()
            threading.Thread(target=self._wait, args=(self.process, log, answered), daemon=True).start()

    def _wait(self, process: subprocess.Popen, log, answered: int) -> None:
        code = process.wait()
        log.close()
        if code:  # its line in rounds.jsonl outlives the server; the round waits for new answers
            lines = (self.session.directory / "retrain.log").read_text(errors="replace").strip().splitlines()
            said = next((line for line in reversed(lines) if line.startswith("error: ")), None)
            failed = said.removeprefix("error: ") if said else f"exit status {code}: see retrain.log"
            append_jsonl(self.session.directory / ROUNDS_FILE, FailedRound(failed, answered).to_record())
        self.session.load_batches()  # the round's next batch replaces the rest of the queue

    def status(self) -> dict:
        running, logged = self.running, self.session.rounds()
        rounds = ran(logged)
        last = next((r for r in reversed(rounds) if r.total_seconds), None)
        return {
            "running": running,
            "elapsed": round(time.time() - self.started, 1) if running and self.started else None,
            "estimate": last.total_seconds if last else None,
            "failed": logged[-1].failed if logged and isinstance(logged[-1], FailedRound) else None,
            "every": self.options.retrain_every if self.options.retrain else None,
            "adapter": adapter_name(self.session, self.options),
            "rounds": [r.to_record() for r in rounds],
            "use": self.use(rounds),
            "advice": self.advice(rounds),
        }

    def advice(self, rounds: list[Round]) -> str | None:
        """What the page says once rounds stop beating where the session started: what the answers hold."""
        tried = [r for r in rounds if r.round > 0]
        start = next((r.f1 for r in rounds if r.round == 0), None)
        if len(tried) < 2 or start is None or any(r.f1 is not None and r.f1 > start for r in tried):
            return None
        progress = self.session.progress()
        names, answered = sum(progress.entities.values()), progress.answered
        said = f"{len(tried)} rounds have not beaten the start: the {answered} answers so far hold {names} names"
        if names < answered / 2:
            said += "; too few to learn from: a pool that holds more names (xling select corpus:wikiann-qu/silver-pool) teaches more"
        return said

    def use(self, rounds: list[Round]) -> str | None:
        """The command that tags with the session's adapter (the best round's), workspace included."""
        if not rounds:
            return None
        spec = self.session.options.tagger
        where = f" -w {shlex.quote(spec.workspace)}" if spec.workspace else ""
        return f"xling tag --lang {spec.lang} -t {rounds[-1].adapter}{where} FILE"


def command(directory: Path, options: AnnotateOptions) -> list[str]:
    return [sys.executable, "-m", "xling.annotation.retrain", str(directory), json.dumps(asdict(options))]


if __name__ == "__main__":
    from xling.records import from_record

    try:
        retrain_round(Path(sys.argv[1]), from_record(AnnotateOptions, json.loads(sys.argv[2]), "options"))
    except XlingError as err:  # the page shows the log's last line: one that says what to do
        sys.exit(f"error: {err}")
