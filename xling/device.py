"""Which device and precision run the model (training and tagging both ask here).

torch is imported inside the functions, so that the options, which name these choices, load without it.
"""

from __future__ import annotations

import warnings

from xling.errors import XlingError

DEVICE_HELP = "auto (a GPU when present), cpu or cuda."


def pick_device(requested: str) -> str:
    import torch

    if requested == "cuda" and not torch.cuda.is_available():
        raise XlingError("--device cuda was asked for, but no CUDA GPU is available")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


PRECISIONS = ("auto", "fp32", "bf16", "fp16")
INFERENCE_PRECISIONS = PRECISIONS + ("int8",)  # int8: dynamic quantisation, for tagging and evaluation only
PRECISION_HELP = (
    "auto (bf16 on CPUs and GPUs with bf16 units, fp16 on older GPUs, else fp32), fp32, bf16 or fp16 (GPU): "
    "what the model computes in; trained weights, optimiser state and losses stay fp32."
)
INFERENCE_PRECISION_HELP = (
    "auto (bf16 on CPUs and GPUs with bf16 units, fp16 on older GPUs, else fp32), fp32, bf16, fp16 (GPU) or "
    "int8 (CPU: the Linear layers dynamically quantised)."
)


def cpu_has_bf16() -> bool:
    """bf16 matrix instructions (AVX-512 BF16 or AMX): bf16 autocast is then faster than fp32, not slower."""
    import torch

    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


def check_precision(requested: str, inference: bool = False) -> str:
    allowed = INFERENCE_PRECISIONS if inference else PRECISIONS
    if requested not in allowed:
        hint = " (int8 is for tagging and evaluation)" if requested == "int8" else ""
        raise XlingError(f"precision must be one of {', '.join(allowed)}, not {requested!r}{hint}")
    return requested


def pick_precision(requested: str, device: str) -> str:
    """fp32, bf16 or fp16 (or int8, for inference) for `device` (cpu or cuda)."""
    if check_precision(requested, inference=True) == "fp16" and device == "cpu":
        raise XlingError("--precision fp16 runs on a GPU only; use bf16 or fp32 on the CPU")
    if requested == "int8" and device != "cpu":
        raise XlingError("--precision int8 (dynamic quantisation) runs on the CPU only; use bf16 or fp16 on a GPU")
    if requested == "bf16" and device == "cpu" and not cpu_has_bf16():
        warnings.warn(
            "this CPU has no bf16 matrix units (AVX-512 BF16 or AMX): bf16 is emulated and several times "
            "slower than fp32 here; --precision auto picks fp32",
            stacklevel=2,
        )
    if requested != "auto":
        return requested
    if device == "cuda":
        import torch

        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "bf16" if cpu_has_bf16() else "fp32"


def autocast(device: str, precision: str):
    """The autocast context for a picked precision (fp32: autocast off)."""
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    return torch.autocast(device, dtype=dtype, enabled=dtype is not None)


def quantize_int8(model):
    """Dynamic int8 quantisation (`torch.ao`) of every Linear layer, in place: int8 weights, activations
    quantised on the fly; LayerNorms, embeddings and the hooks around them stay as they are."""
    import torch
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():  # torch announces the move of this API to torchao; it works as it is
        warnings.filterwarnings("ignore", message=".*deprecated", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated")
        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
