"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import torch

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
