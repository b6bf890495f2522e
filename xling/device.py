"""Which device runs the model (training and tagging both ask here), and which process this is."""

from __future__ import annotations

import os

import torch

from xling.errors import XlingError

DEVICE_HELP = "auto (a GPU when present), cpu or cuda."


def pick_device(requested: str) -> str:
    if requested == "cuda" and not torch.cuda.is_available():
        raise XlingError("--device cuda was asked for, but no CUDA GPU is available")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def process_rank() -> int:
    """This process's rank under `torchrun` or `accelerate launch`; 0 when it runs alone."""
    return int(os.environ.get("RANK", "0"))


def check_launcher() -> None:
    """`accelerate launch --cpu --num_processes N` sets MASTER_ADDR but starts one process (MPI aside): say so."""
    env = os.environ
    if env.get("ACCELERATE_USE_CPU") == "True" and "MASTER_ADDR" in env and "WORLD_SIZE" not in env:
        raise XlingError(
            "`accelerate launch --cpu` starts a single process; for several CPU processes run "
            "`accelerate launch --multi_gpu --num_processes N -m xling ...` (gloo on CPU when no GPU is "
            "present) or `torchrun --nproc_per_node N -m xling ...`"
        )
