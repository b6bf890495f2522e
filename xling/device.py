"""Which device runs the model: training and tagging both ask here."""

from __future__ import annotations

import torch

from xling.errors import XlingError


def pick_device(requested: str) -> str:
    if requested == "cuda" and not torch.cuda.is_available():
        raise XlingError("--device cuda was asked for, but no CUDA GPU is available")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested
