"""Which device and precision run the model (training and tagging both ask here), and which process this is."""

from __future__ import annotations

import warnings

import torch

from xling.errors import XlingError

DEVICE_HELP = "auto (a GPU when present), cpu or cuda."


def pick_device(requested: str) -> str:
    if requested == "cuda" and not torch.cuda.is_available():
        raise XlingError("--device cuda was asked for, but no CUDA GPU is available")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


PRECISIONS = ("auto", "fp32", "bf16", "fp16")
PRECISION_HELP = (
    "auto (bf16 on CPUs and GPUs with bf16 units, fp16 on older GPUs, else fp32), fp32, bf16 or fp16 (GPU): "
    "what the model computes in; weights, optimiser state and losses stay fp32."
)


def cpu_has_bf16() -> bool:
    """bf16 matrix instructions (AVX-512 BF16 or AMX): bf16 autocast is then faster than fp32, not slower."""
    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


def check_precision(requested: str) -> str:
    if requested not in PRECISIONS:
        raise XlingError(f"precision must be one of {', '.join(PRECISIONS)}, not {requested!r}")
    return requested


def pick_precision(requested: str, device: str) -> str:
    """fp32, bf16 or fp16 for `device` (cpu or cuda)."""
    if check_precision(requested) == "fp16" and device == "cpu":
        raise XlingError("--precision fp16 runs on a GPU only; use bf16 or fp32 on the CPU")
    if requested == "bf16" and device == "cpu" and not cpu_has_bf16():
        warnings.warn(
            "this CPU has no bf16 matrix units (AVX-512 BF16 or AMX): bf16 is emulated and several times "
            "slower than fp32 here; --precision auto picks fp32",
            stacklevel=2,
        )
    if requested != "auto":
        return requested
    if device == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "bf16" if cpu_has_bf16() else "fp32"


def autocast(device: str, precision: str):
    """The autocast context for a picked precision (fp32: autocast off)."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    return torch.autocast(device, dtype=dtype, enabled=dtype is not None)
