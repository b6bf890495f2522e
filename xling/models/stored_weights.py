"""Weights stored for cheaper compute: the Linear layers' weights in the dtype autocast computes in (bf16, fp16),
for a block (tagging) or for good (frozen weights while training), and dynamic int8 quantisation."""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import torch

from xling.device import torch_dtype


def lower_linear_weights(model, dtype: torch.dtype, frozen_only: bool = False, copies: dict | None = None) -> list:
    """Store the fp32 weights of every Linear layer (with `frozen_only`, of those that do not train) in `dtype`, in
    place; returns each changed parameter with its former data. Autocast would cast them to the same values at
    every call. `copies` keeps the cast weights from one call to the next, each valid while its original is
    unchanged."""
    changed = []
    for module in model.modules():
        if not isinstance(module, torch.nn.Linear):
            continue
        for param in module.parameters(recurse=False):
            if param.dtype != torch.float32 or (frozen_only and param.requires_grad):
                continue
            if copies is None:
                lowered = param.detach().to(dtype)
            else:
                stamp = (param.data_ptr(), param._version, param.device)
                if copies.get(param, (None,))[0] != stamp:
                    copies[param] = (stamp, param.detach().to(dtype))
                lowered = copies[param][1]
            changed.append((param, param.data))
            param.data = lowered
    return changed


@contextmanager
def linear_weights_stored_for(model, precision: str, copies: dict):
    """Inside the block, the Linear layers' weights are stored as `precision` (bf16, fp16) computes; the originals
    are back after it. On a CPU with AMX autocast's casts took a fifth of the tagging time."""
    dtype = torch_dtype(precision)
    changed = lower_linear_weights(model, dtype, copies=copies) if dtype is not None else []
    try:
        yield
    finally:
        for param, data in changed:
            param.data = data


def quantize_int8(model):
    """Dynamic int8 quantisation (`torch.ao`), in place, of the frozen encoder's Linear layers that do not
    narrow: int8 weights with a scale per output channel, activations quantised on the fly. The feed-forward
    output projections (the layers that narrow, from the feed-forward width back to the hidden size; their
    inputs, after GELU, have the outliers that int8 flattens), the layers adapters hook, the adapters and the
    heads stay fp32: the README gives the F1 this keeps against quantising every Linear layer with one scale
    per matrix."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    spec = {
        name: per_channel_dynamic_qconfig
        for name, module in model.encoder.named_modules()
        # a Linear an adapter hooks (LoRA's projections) stays fp32: quantising replaces the module, and its hook
        if isinstance(module, torch.nn.Linear)
        and module.out_features >= module.in_features
        and not module._forward_hooks
    }
    with warnings.catch_warnings():  # torch announces the move of this API to torchao; it works as it is
        warnings.filterwarnings("ignore", message=".*deprecated", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated")
        quantize_dynamic(model.encoder, spec, dtype=torch.qint8, inplace=True)
    return model
