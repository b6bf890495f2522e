"""What the training loop (`xling.train.loop`) needs from an objective, and what a run of it returns."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import torch

from xling.adapters import AdaptedModel
from xling.train.log_lines import Evaluation


class Objective(Protocol):
    """What the loop needs from a training objective."""

    evaluate_at_start: bool  # e.g. held-out perplexity before training
    selects_best: bool  # keep the weights of the best evaluation `score`

    def micro_batches_per_epoch(self, batch_size: int) -> int: ...

    def batches(self, epoch: int, batch_size: int) -> Iterator[dict]: ...

    def prepare(self, batch: dict, step: int) -> dict[str, torch.Tensor]:
        """The batch as tensors with one row per example: `input_ids`, `attention_mask`, `labels` (IGNORE
        where a position carries no loss) and any other per-row tensor `loss` reads; any randomness follows
        the seed and step alone."""

    def loss(self, model: AdaptedModel, batch: dict[str, torch.Tensor], scale: float) -> torch.Tensor:
        """The summed loss over the batch's labelled positions times `scale`, plus any regulariser."""

    def evaluate(self, model: AdaptedModel) -> dict[str, float]: ...

    def describe(self, loss: float) -> str: ...


@dataclass
class TrainResult:
    steps: int
    seconds: float
    tokens: int
    evaluations: list[Evaluation] = field(default_factory=list)
    best: Evaluation | None = None
    stopped_early: bool = False
    is_main_process: bool = True  # under torchrun / accelerate launch, only the main process saves
    precision: str = "fp32"  # what the model computed in
