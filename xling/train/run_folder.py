"""A run's folder: the options it was started with (`run.json`), its evaluation log (`log.jsonl`) and its
checkpoint, checked before a run resumes, cleared when it restarts."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

from xling.errors import XlingError
from xling.fileio import parse_json
from xling.options import printable
from xling.train.checkpoint import saved_value
from xling.train.config import TrainConfig
from xling.train.log_lines import Evaluation, TrainingLine, log_line
from xling.train.processes import processes, wait_for_everyone

LOG_FILE = "log.jsonl"
RUN_FILE = "run.json"


def damaged(run_dir: Path, what: str) -> XlingError:
    return XlingError(f"the interrupted run in {run_dir} is damaged ({what}); add --restart to start over")


def check_run_options(run_dir: Path, options: dict, write: bool) -> None:
    run_file = run_dir / RUN_FILE
    if run_file.is_file():
        try:
            previous = parse_json(run_file.read_text())
        except (ValueError, UnicodeDecodeError, RecursionError):  # ValueError: also NaN, a 4,300-digit integer
            raise damaged(run_dir, f"{RUN_FILE} is not valid JSON") from None
        if not isinstance(previous, dict):
            raise damaged(run_dir, f"{RUN_FILE} is not a JSON object of options")
        if previous != options:
            changed = sorted(k for k in set(previous) | set(options) if previous.get(k) != options.get(k))
            raise XlingError(
                f"an interrupted run in {run_dir} used other options ({printable(', '.join(map(str, changed)))}); "
                "rerun with the same options to resume, or add --restart to start over"
            )
    elif write:
        run_dir.mkdir(parents=True, exist_ok=True)
        run_file.write_text(json.dumps(options, indent=2, sort_keys=True) + "\n")


def read_log(run_dir: Path, up_to_step: int, write: bool) -> list[Evaluation | TrainingLine]:
    """The log's lines up to the checkpoint's step (with `write`, the log cut back to them); a last line cut short
    by a kill is dropped."""
    log = run_dir / LOG_FILE
    lines = [line for line in log.read_text().splitlines() if line.strip()] if log.is_file() else []
    entries = []
    for number, line in enumerate(lines, start=1):
        try:
            entry = parse_json(line)
        except (ValueError, RecursionError):
            if number == len(lines):
                break
            raise damaged(run_dir, f"{LOG_FILE} line {number} is not valid JSON") from None
        try:
            entries.append(log_line(entry, f"{LOG_FILE} line {number}"))
        except XlingError as err:
            raise damaged(run_dir, str(err)) from None
    entries = [e for e in entries if e.step <= up_to_step]
    if write:
        log.write_text("".join(json.dumps(e.to_line()) + "\n" for e in entries))
    return entries


def clear_run_dir(run_dir: Path, restart: bool) -> None:
    """With `restart`, discard an interrupted run; a run folder that is a link is never followed (it could lead
    out of the workspace): refused, or with `restart` removed (the link, not what it points to)."""
    if run_dir.is_symlink():
        if not restart:
            raise XlingError(f"{run_dir} is a symbolic link, which xling does not follow; remove it or add --restart")
        run_dir.unlink()
    if restart and run_dir.exists():
        shutil.rmtree(run_dir)


def prepare(config: TrainConfig, run_dir: Path, run_options: dict, restart: bool):
    """The device, precision and accelerator of a run, with its folder cleared (`restart`) or checked against the
    options it was started with."""
    # a resumed run keeps the precision it started with, whatever `auto` would say now (a cache cleared, a GPU added)
    resumed = None if restart or config.precision != "auto" else saved_value(run_dir / "checkpoint", "precision")
    log_dir = run_dir.parent.parent / "logs" if config.report_to else None
    device, precision, accelerator = processes(config, resumed, log_dir)
    if accelerator.is_main_process:
        clear_run_dir(run_dir, restart)
    wait_for_everyone(accelerator)
    # where it reports is no part of what it trains with: a resumed run may report elsewhere
    recorded = {key: value for key, value in asdict(config).items() if key != "report_to"}
    run_record = {**run_options, "train": recorded, "computed_in": precision}  # what `auto` resolved to, kept
    check_run_options(run_dir, run_record, write=accelerator.is_main_process)
    wait_for_everyone(accelerator)
    return device, precision, accelerator
