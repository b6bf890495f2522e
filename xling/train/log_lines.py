"""The lines of a run's `train_log.jsonl` (`log.jsonl` in the run folder while it trains), without torch.

Two kinds, as a tracker gets them: an evaluation (`step`, `epoch`, `seconds` and the objective's metrics: `f1` and
`score`, or `perplexity`), and every `--log-every` steps a training line (`kind: "train"`: the mean loss of those
steps, the learning rate after the last, the mean seconds a step and the tokens per second), which a plot of the
loss over steps reads. Logs written before training lines existed hold evaluations only, and read the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xling.errors import XlingError
from xling.fileio import parse_json
from xling.options import from_record

TRAINING = "train"  # the `kind` of a training line; an evaluation has none


@dataclass(frozen=True)
class TrainingLine:
    step: int
    epoch: float
    loss: float  # the mean over the steps since the line before
    learning_rate: float
    step_seconds: float  # the mean seconds a step took over them
    tokens_per_second: float
    kind: str = TRAINING


@dataclass
class TrainLog:
    evaluations: list[dict]
    training: list[TrainingLine]


def is_training_line(entry: dict) -> bool:
    return entry.get("kind") == TRAINING


def read_train_log(file: Path) -> TrainLog:
    """A saved `train_log.jsonl`, its training lines typed; an error names the file and line."""
    log = TrainLog([], [])
    for number, line in enumerate(Path(file).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = parse_json(line)
        except (ValueError, RecursionError):
            raise XlingError(f"{file}:{number}: not a JSON line of a training log") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("step"), int):
            raise XlingError(f"{file}:{number}: not a line of a training log (it needs a step)")
        if is_training_line(entry):
            log.training.append(from_record(TrainingLine, entry, f"{file}:{number}"))
        else:
            log.evaluations.append(entry)
    return log
