"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import time
from pathlib import Path

import torch

from xling.data.text import parallel_files, read_parallel, read_text
from xling.device import autocast, bound_kernel_cache
from xling.options import defaults
from xling.train.cpu import cpu_training
from xling.train.frozen import store_frozen_weights, training_mode
from xling.train.loop import make_optimizer

REPO = Path(__file__).resolve().parent.parent


def parsed(parser: argparse.ArgumentParser, smoke: dict) -> argparse.Namespace:
    """The arguments; with `--smoke`, the smallest real run (`smoke`'s values, which write nothing into results/):
    what `tests/test_benches.py` runs, so that no bench breaks unseen."""
    shown = " ".join(f"--{key.replace('_', '-')} {value}" for key, value in smoke.items() if value is not None)
    parser.add_argument("--smoke", action="store_true", help=f"the smallest real run, as the tests run it ({shown})")
    args = parser.parse_args()
    if args.smoke:
        for key, value in smoke.items():
            setattr(args, key, value)
    return args


# the smoke runs' recipe steps: two optimiser steps over a few sentences, a few scored
SMOKE_OPTIONS = {
    "train-lang": {"steps": 2, "eval_every": 2, "checkpoint_every": 2},
    "train-task": {"steps": 2, "eval_every": 2, "checkpoint_every": 2, "train_limit": 32, "dev_limit": 16},
    "evaluate": {"limit": 16},
}
SMOKE_LINES = 64  # a smoke run's text corpus: the first lines of the real one


def shrunk(step, folder: Path) -> dict:
    """A recipe step's options as a smoke run takes them; a language adapter's corpus its first lines, in `folder`."""
    options = step.options | SMOKE_OPTIONS[step.run]
    if step.run == "train-lang":
        options["corpus"] = [first_lines(options["corpus"], folder / f"{step.title}.txt")]
    return options


def first_lines(sources, out: Path) -> str:
    """The first lines of `sources`' text written to `out`, a smoke run's corpus; its path."""
    out.write_text("\n".join(read_text(sources)[0][:SMOKE_LINES]) + "\n", encoding="utf-8")
    return str(out)


def first_pairs(sources: list[str], source_lang: str, lang: str, folder: Path) -> str:
    """The first translation pairs of `sources`' first pair of files written to `folder` (NAME.SOURCE_LANG beside
    NAME.LANG), a smoke run's parallel text; the folder's path."""
    pairs = read_parallel(*parallel_files(sources, source_lang, lang)[0])[:SMOKE_LINES]
    folder.mkdir(parents=True, exist_ok=True)
    for side, suffix in enumerate((source_lang, lang)):
        (folder / f"pairs.{suffix}").write_text("".join(pair[side] + "\n" for pair in pairs), encoding="utf-8")
    return str(folder)


MISSING = 77  # the exit code of a bench whose run needs what this machine lacks: the tests skip it, with the reason


def missing(what: str) -> None:
    """Stop: this run needs `what`, which is not here (said on stderr; `tests/test_benches.py` skips on it)."""
    print(f"this bench needs {what}", file=sys.stderr)
    raise SystemExit(MISSING)


def corpora_root() -> Path:
    root = Path(os.environ.get("XLING_CORPORA", REPO.parent / "shared" / "corpora"))
    if not (root / "ner").is_dir():
        raise SystemExit(
            f"the real corpora: set XLING_CORPORA to the folder holding ner/ (docs/recipes.md; not at {root})"
        )
    return root


def quechua_lines(sample: int | None = None, seed: int = 0) -> list[str]:
    """The lines of the Quechua text corpus (`text/qu`), or a seeded random `sample` of them."""
    lines, _ = read_text([str(corpora_root() / "text" / "qu")])
    return lines if sample is None else random.Random(seed).sample(lines, sample)


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
    command's default, on a CPU its dropout and attention (`xling.train.cpu`) and its bound on oneDNN's kernels."""
    if device == "cpu":
        bound_kernel_cache("training")
    store_frozen_weights(model, precision)
    training_mode(model, defaults(options).training.encoder_dropout)
    _TRAINING.enter_context(cpu_training(model.encoder, device))


def training_step(forward, params: list, ids, mask, targets, precision: str, device: str = "cpu"):
    """One step of `forward(ids, mask) -> logits` with cross-entropy and fused AdamW (xling's loop and the
    Transformers Trainer's default), ending when the device has finished it; returns the step and the number
    of trained parameters."""
    optimizer = make_optimizer(params, 1e-4)

    def step():
        with autocast(device, precision):
            logits = forward(ids, mask).float()
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1), ignore_index=-100)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if device == "cuda":
            torch.cuda.synchronize()

    return step, sum(p.numel() for p in params)
