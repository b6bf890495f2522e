"""The files an adapter directory holds, and reading weights safely: what saving and AdapterHub import share."""

from __future__ import annotations

import pickle
from pathlib import Path

import torch
from safetensors.torch import load_file

from xling.errors import XlingError

CONFIG_FILE = "adapter_config.json"
WEIGHTS_FILE = "adapter_model.safetensors"
HEAD_CONFIG_FILE = "head_config.json"
HEAD_WEIGHTS_FILE = "head_model.safetensors"


def read_weights(file: Path) -> dict[str, torch.Tensor]:
    """Tensors from a safetensors file (or a plain-tensor PyTorch file); damaged or non-finite weights are refused."""
    if not file.is_file():
        raise XlingError(f"{file} is missing")
    try:
        if file.suffix == ".safetensors":
            state = load_file(str(file))
        else:
            state = torch.load(file, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise XlingError(f"{file} holds pickled Python objects, which xling never loads (only plain tensors)") from None
    except Exception as err:  # safetensors and torch raise their own types for truncated or foreign files
        raise XlingError(f"{file} is damaged or not a weights file ({str(err).splitlines()[0]})") from None
    if not isinstance(state, dict) or not all(isinstance(t, torch.Tensor) for t in state.values()):
        raise XlingError(f"{file} is not a file of named tensors")
    bad = [key for key, tensor in state.items() if tensor.is_floating_point() and not torch.isfinite(tensor).all()]
    if bad:
        raise XlingError(f"{file} holds non-finite weights (NaN or infinity) in {', '.join(bad[:3])}")
    return state
