"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from pathlib import Path

import torch

from xling.options import defaults
from xling.train.cpu import cpu_training
from xling.train.loop import store_frozen_weights, training_mode

REPO = Path(__file__).resolve().parent.parent


def corpora_root() -> Path:
    root = Path(os.environ.get("XLING_CORPORA", REPO.parent / "shared" / "corpora"))
    if not (root / "ner").is_dir():
        raise SystemExit(f"corpora not found at {root}: set XLING_CORPORA")
    return root


def time_interleaved(steps: dict, rounds: int, warmup: int = 1) -> dict[str, float]:
    """Median seconds per call of each function, calling them in turn so that load affects all alike."""
    for _ in range(warmup):
        for fn in steps.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, fn in steps.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def setup_threads():
    torch.set_num_threads(int(os.environ.get("XLING_BENCH_THREADS", os.cpu_count() or 1)))


_TRAINING = contextlib.ExitStack()  # what `train_as_xling` enters stays entered for the life of the process


def train_as_xling(model, precision: str, options, device: str = "cpu") -> None:
    """Set `model` (already on `device`) up as xling's training loop does for the command whose options class
    is `options`: frozen Linear weights stored in the compute precision, the frozen encoder's dropout at the
    command's default, on a CPU its dropout and attention (`xling.train.cpu`)."""
    store_frozen_weights(model, precision)
    training_mode(model, defaults(options).training.encoder_dropout)
    _TRAINING.enter_context(cpu_training(model.encoder, device))
