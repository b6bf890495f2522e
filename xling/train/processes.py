"""The processes of a run and the accelerator each trains with: one process of its own, or one of those that
`torchrun` or `accelerate launch` started (torch DDP), and the trackers it reports to."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from xling.device import PRECISION_TABLE, PRECISIONS, bound_kernel_cache, pick_device, pick_precision
from xling.errors import XlingError
from xling.train.config import TrainConfig


def process_state(device: str):
    """accelerate's state of this process for a picked device: a process of its own, or one of those that
    torchrun or accelerate launch started.

    accelerate sets its state once per process and then refuses another device or precision (or keeps
    the CPU silently), yet a process of its own may train on a GPU, then on the CPU (recipes, the Python
    API): until processes are joined in a group, its state is made afresh each time (what accelerate's own
    tests do between runs)."""
    from accelerate import PartialState
    from accelerate.state import AcceleratorState

    local_processes = int(os.environ.get("LOCAL_WORLD_SIZE", 1))  # set by both launchers
    if device == "cuda" and local_processes > (gpus := torch.cuda.device_count()):
        raise XlingError(
            f"{local_processes} processes were started on a machine with {gpus} GPU(s), and DDP needs a GPU for "
            f"each: start {gpus} (--nproc_per_node / --num_processes), or pass --device cpu to train CPU processes"
        )
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        AcceleratorState._reset_state(reset_partial_state=True)
    return PartialState(cpu=device == "cpu")


def make_accelerator(device: str, precision: str, report_to: str | None = None, log_dir: Path | None = None):
    """The accelerator for a picked device and precision, reporting to a tracker (`report_to`).

    bf16 runs under xling's own autocast (`_Run.autocast`): accelerate fixes its precision once per
    process, and one process may train at several (recipes, the Python API). fp16 needs accelerate's
    gradient scaler, so it is accelerate's setting."""
    from accelerate import Accelerator

    process_state(device)
    mixed = precision if PRECISION_TABLE[precision].grad_scaler else "no"
    return Accelerator(cpu=device == "cpu", mixed_precision=mixed, log_with=report_to, project_dir=log_dir)


def wait_for_everyone(state) -> None:
    """Wait until every process gets here. accelerate's barrier (`state.wait_for_everyone()`) names this
    process's GPU even when CPU processes train over gloo, which fails on a machine with fewer GPUs than
    processes; a barrier on the CPU names none."""
    if state.num_processes > 1 and state.device.type == "cpu":
        torch.distributed.barrier()
    else:
        state.wait_for_everyone()


def processes(config: TrainConfig, resumed: str | None = None, log_dir: Path | None = None):
    """The device, the precision (`resumed`: the one an interrupted run was in) and the accelerator of this run
    (one process, or each of a distributed run)."""
    device = pick_device(config.device)
    if device == "cpu":
        bound_kernel_cache("training")
    # a resumed run keeps the precision it was picked in, where it trains on this device
    usable = resumed not in (None, "auto") and resumed in PRECISIONS and device in PRECISION_TABLE[resumed].devices
    precision = resumed if usable else pick_precision(config.precision, device)
    accelerator = make_accelerator(device, precision, config.report_to, log_dir)
    if accelerator.num_processes > 1 and device == "cpu":
        # auto times bf16 in each process: all train in what the first one picked
        from accelerate.utils import broadcast_object_list

        precision = broadcast_object_list([precision])[0]
    return device, precision, accelerator


def flat(record: dict, prefix: str = "") -> dict:
    """A run's options as a tracker's hyperparameters: nested keys joined by `/`, lists and None as text."""
    found = {}
    for key, value in record.items():
        if isinstance(value, dict):
            found |= flat(value, f"{prefix}{key}/")
        else:
            found[f"{prefix}{key}"] = value if isinstance(value, int | float | str | bool) else str(value)
    return found
