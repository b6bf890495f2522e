"""The lines of a run's `train_log.jsonl` (`log.jsonl` in the run folder while it trains), without torch.

Two kinds, as a tracker gets them: an `Evaluation` (`step`, `epoch`, `seconds` and the objective's metrics, flat
beside them: `f1`, `precision`, `recall` and `score`, or `perplexity`, `held_out_loss`, `perplexity_en`, ...), and
every `--log-every` steps a `TrainingLine` (`kind: "train"`: the mean loss of those steps, the learning rate after
the last, the mean seconds a step and the tokens per second), which a plot of the loss over steps reads. Logs
written before training lines existed hold evaluations only, and read the same.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from xling.errors import XlingError
from xling.fileio import read_jsonl
from xling.records import from_record

TRAINING = "train"  # the `kind` of a training line; an evaluation has none
PLACE = ("step", "epoch", "seconds")  # where in the run an evaluation was made; its other keys are its metrics


@dataclass
class LoopState:
    """Where the loop is, as a checkpoint saves it: what a resumed run starts from."""

    step: int = 0
    epoch: int = 0
    position: int = 0  # batches taken in this epoch
    tokens: int = 0
    seconds: float = 0.0
    best: dict | None = None  # the selected evaluation, as its log line
    stale: int = 0  # evaluations since the selected one


@dataclass(frozen=True)
class Evaluation:
    """An evaluation during training: what the loop compares (`score`), selects and logs."""

    step: int
    epoch: float
    seconds: float  # training seconds so far
    metrics: dict[str, float]

    @property
    def score(self) -> float | None:
        """What selection compares, higher better (the dev F1); None for an objective that selects nothing."""
        return self.metrics.get("score")

    @property
    def perplexity(self) -> float | None:
        """The held-out perplexity of a masked-LM objective (of its main language)."""
        return self.metrics.get("perplexity")

    def to_line(self) -> dict:
        return {"step": self.step, "epoch": self.epoch, "seconds": self.seconds, **self.metrics}

    @classmethod
    def from_line(cls, entry: dict, where: str) -> Evaluation:
        """An evaluation from its log line, its place and metrics checked (numbers); an error names `where`."""
        metrics = {key: value for key, value in entry.items() if key not in PLACE}
        return from_record(cls, {key: entry[key] for key in PLACE if key in entry} | {"metrics": metrics}, where)


@dataclass(frozen=True)
class TrainingLine:
    step: int
    epoch: float
    loss: float  # the mean over the steps since the line before
    learning_rate: float
    step_seconds: float  # the mean seconds a step took over them
    tokens_per_second: float
    kind: str = TRAINING

    def to_line(self) -> dict:
        return asdict(self)


@dataclass
class TrainLog:
    evaluations: list[Evaluation]
    training: list[TrainingLine]

    @classmethod
    def read(cls, file: Path) -> TrainLog:
        """A saved `train_log.jsonl`, each line typed; a damaged line is one error naming the file and line."""
        log = cls([], [])
        for line in read_jsonl(Path(file), record=log_line):
            (log.training if isinstance(line, TrainingLine) else log.evaluations).append(line)
        return log


def log_line(entry, where: str) -> Evaluation | TrainingLine:
    """A parsed line of `train_log.jsonl` as its record; an error names `where`."""
    if not isinstance(entry, dict) or not isinstance(entry.get("step"), int):
        raise XlingError(f"{where}: not a line of a training log (it needs a step)")
    if entry.get("kind") == TRAINING:
        return from_record(TrainingLine, entry, where)
    return Evaluation.from_line(entry, where)
