"""The life of one training run, the same for every training command.

A run refuses to replace an adapter unless told to, trains in its run directory
(checkpoints and log, so that rerunning the command resumes), then saves the adapter
with its report and training log and removes the run directory. Under `torchrun` or
`accelerate launch` every process trains its share, and only the main process saves.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from rich.console import Console

from xling import __version__
from xling.adapters import AdaptedModel
from xling.adapters.model import ParameterCount
from xling.errors import XlingError
from xling.fileio import EntryLock
from xling.models.loading import ModelSpec
from xling.names import check_lang
from xling.roles import Role
from xling.train.cards.adapter import model_card
from xling.train.cards.common import CARD_FILE
from xling.train.loop import train
from xling.train.objective import Objective, TrainResult
from xling.train.progress import TrainingProgress
from xling.train.report import REPORT_FILE, BestStep, Resolved, RunOptions, RunReport, options_record, read_options
from xling.train.run_folder import LOG_FILE
from xling.workspace import Workspace


def refuse_to_replace(target: Path, what: str, overwrite: bool) -> None:
    if target.exists() and not overwrite:
        raise XlingError(f"a {what} already exists at {target} (use --overwrite to replace it)")


def start(options: RunOptions, role: Role, console: Console | None) -> tuple[Console, str, Workspace, TrainingRun]:
    """What every trainer does first: its console (standard error unless given), its language checked, its
    workspace, and its run under the name it saves as (refused now if that adapter exists)."""
    lang, workspace = check_lang(options.lang), Workspace(options.workspace, options.model)
    run = TrainingRun.in_workspace(workspace, role, options.run_name(), options.overwrite, options.restart)
    return console or Console(stderr=True), lang, workspace, run


@dataclass
class TrainingRun:
    role: Role  # what it trains: its report's role, and messages' words ("language adapter")
    target: Path  # where the finished adapter goes
    run_dir: Path  # where the run keeps its checkpoints and log
    overwrite: bool = False
    restart: bool = False
    started: float = field(default_factory=time.perf_counter)

    @classmethod
    def in_workspace(cls, workspace: Workspace, role: Role, name: str, overwrite: bool, restart: bool) -> TrainingRun:
        """The run of adapter `name` in its role (lang, task, fusion), trained and saved in the workspace."""
        return cls(role, workspace.adapter_dir(role, name), workspace.run_dir(role, name), overwrite, restart)

    def __post_init__(self):
        refuse_to_replace(self.target, self.role.title, self.overwrite)
        self.lock: EntryLock | None = None

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()

    def train(
        self,
        model: AdaptedModel,
        objective: Objective,
        options: RunOptions,
        counts: ParameterCount,
        title: str,
        progress: TrainingProgress | None = None,
        resolved: Resolved | None = None,
    ) -> TrainResult:
        """Train with `options` as the run resolved them (name, paths, the adapter trained, the loop's settings),
        and `resolved`, what it resolved beside them: both recorded, and a resumed run must share them."""
        recorded = options_record(self.role, options, resolved or Resolved())
        # as a reader will have them: data given in memory by what identifies it
        self.options, self.resolved = read_options(self.role, recorded, asdict(options.training), "the run's options")
        self.counts = counts
        # Held from the first write to the run directory to the save; by the first process for all of them.
        if os.environ.get("RANK", "0") == "0":
            self.lock = EntryLock(self.target, self.role.title)
        try:
            # again: another run may have saved it since
            refuse_to_replace(self.target, self.role.title, self.overwrite)
            self.result = train(
                model, objective, options.training, self.run_dir, recorded, title, progress, restart=self.restart
            )
        except BaseException:
            self.release()
            raise
        return self.result

    def report(self, name: str, model: str | None = None, **fields) -> RunReport:
        """The run's report: what the caller describes (the model, the fields of its role), then what every run
        shares."""
        result = self.result
        return RunReport(
            name=name,
            role=self.role,
            model=model,
            **fields,
            model_identity=ModelSpec.parse(model).identity if model else None,
            xling_version=__version__,
            steps=result.steps,
            stopped_early=result.stopped_early,
            training_seconds=round(result.seconds, 1),
            computed_in=result.precision,
            total_seconds=round(time.perf_counter() - self.started, 1),
            best=result.best and BestStep.of(result.best),
            trainable_parameters=self.counts.trainable,
            total_parameters=self.counts.total,
            options=self.options,
            resolved=self.resolved,
        )

    def save(
        self,
        report: RunReport,
        write: Callable[[Path, dict[str, str]], None],
        card: Callable[[RunReport], str] = model_card,
    ) -> RunReport:
        """`write(target, extra_files)` saves the adapter (main process only) with its report and model card (by
        default an adapter's); the run directory then goes. Returns the report, where it was saved in it."""
        record = report.to_record()
        try:
            if self.result.is_main_process:
                extra = {
                    REPORT_FILE: json.dumps(record, indent=2) + "\n",
                    "train_log.jsonl": (self.run_dir / LOG_FILE).read_text(),
                    CARD_FILE: card(report),
                }
                write(self.target, extra)
                shutil.rmtree(self.run_dir, ignore_errors=True)
        finally:
            self.release()
        return replace(report, saved_to=str(self.target))
