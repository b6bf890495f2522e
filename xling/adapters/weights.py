"""The files an adapter directory holds, reading weights safely, and checking the base model an adapter names:
what saving and AdapterHub import share."""

from __future__ import annotations

import hashlib
import io
import pickle
import warnings
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors.torch import load_file
from safetensors.torch import save as safetensors_bytes

from xling.adapters.files import CONFIG_FILE
from xling.adapters.record import ModelFingerprint
from xling.errors import XlingError
from xling.models.embedded import EMBEDDED_NAME, UPSTREAM_ID


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
        # torch's restricted unpickler lets a few harmless types through (newer releases more of them)
        raise XlingError(f"{file} holds pickled Python objects, which xling never loads (only plain tensors)")
    bad = [key for key, tensor in state.items() if tensor.is_floating_point() and not torch.isfinite(tensor).all()]
    if bad:
        raise XlingError(f"{file} holds non-finite weights (NaN or infinity) in {', '.join(bad[:3])}")
    return state


def write_weights(file: Path, tensors: dict[str, torch.Tensor]) -> None:
    """An adapter's tensors as safetensors (or, for a `.bin` name, torch's format, which AdapterHub reads by
    default), made in memory and written by Python: a full disk is its OSError (ENOSPC), where torch's and
    safetensors' own writers end in a RuntimeError that names no cause."""
    tensors = {key: tensor.detach().cpu().contiguous() for key, tensor in tensors.items()}
    if file.suffix == ".bin":
        buffer = io.BytesIO()
        torch.save(tensors, buffer)
        data = buffer.getvalue()
    else:
        data = safetensors_bytes(tensors)
    Path(file).write_bytes(data)


# torch.nn.init's functions that layers call when made; a module whose weights are loaded right after needs none
INITIALISERS = ("trunc_normal_", "normal_", "uniform_", "kaiming_uniform_", "xavier_uniform_", "zeros_", "ones_")


@contextmanager
def uninitialised():
    """Modules made meanwhile keep the memory they were given instead of drawing random weights, which their
    loaded weights replace at once (as Transformers' `no_init_weights`): drawing the adapters of a stack took a
    third of a one-line `xling tag`."""
    saved = {name: getattr(torch.nn.init, name) for name in INITIALISERS}
    for name in INITIALISERS:
        setattr(torch.nn.init, name, lambda tensor, *args, **kwargs: tensor)
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(torch.nn.init, name, function)


def load_fitting(module: torch.nn.Module, weights: dict[str, torch.Tensor], what: str) -> None:
    """Load `weights` into `module`, or one line saying that `what` does not match its config (shapes included)."""
    try:
        missing, unexpected = module.load_state_dict(weights, strict=False)
    except RuntimeError as err:  # a shape that differs from the config's
        raise XlingError(f"{what} does not match its config: {str(err).splitlines()[-1].strip()}") from None
    if missing or unexpected:
        raise XlingError(f"{what} does not match its config (missing {missing[:3]}, unexpected {unexpected[:3]})")


def same_upstream(a: str, b: str) -> bool:
    """Whether two base-model labels name the embedded default and the Hub model it was converted from."""
    upstream = {EMBEDDED_NAME: UPSTREAM_ID, UPSTREAM_ID.replace("/", "--"): UPSTREAM_ID, UPSTREAM_ID: UPSTREAM_ID}
    return a != b and upstream.get(a) is not None and upstream.get(a) == upstream.get(b)


def check_base_model(model, expected, path: Path) -> None:
    """The base model an adapter's record names (`expected`, a `BaseModelRecord`: its weights' fingerprint) is
    the loaded `model`'s, or an error that names both. The embedded default's 4-bit weights and the Hub's fp32
    ones of the same model pass with a warning: an adapter moves between them within one seed's spread of F1
    (bench/quantization_gap.py)."""
    mine, theirs = asdict(model.fingerprint), asdict(expected.fingerprint)
    if lacking := sorted(key for key, value in theirs.items() if value is None):
        raise XlingError(
            f"{Path(path) / CONFIG_FILE}: the base-model fingerprint lacks {', '.join(lacking)}, so it cannot "
            "show that the adapter fits this model"
        )
    differing = [key for key, value in theirs.items() if mine[key] != value]
    loaded = getattr(model.encoder, "name_or_path", "") or ""
    if differing == ["embedding_sha256"] and same_upstream(expected.name, loaded):
        warnings.warn(
            f"{path} was trained on {expected.name} and is loaded on {loaded}: other weights of the same model "
            "(4-bit and fp32). Measured on stand-ins, F1 moved within one seed's spread (docs/models.md)",
            stacklevel=3,
        )
        return
    if differing:
        raise XlingError(
            f"{path} was trained on base model {expected.name or '?'} and does not fit the loaded model "
            f"{loaded or '?'} (differs in: {', '.join(differing)})"
        )


FINGERPRINT_ROWS = 64


def base_model_fingerprint(encoder: torch.nn.Module, num_layers: int) -> ModelFingerprint:
    """What identifies a base model, and so which models an adapter fits: its shape, and a hash of part of
    its embedding matrix, over rounded values, so the same model in another dtype or device agrees."""
    embedding = encoder.get_input_embeddings()
    rounded = torch.round(embedding.weight[:FINGERPRINT_ROWS].detach().float().cpu() * 1e3).to(torch.int32)
    return ModelFingerprint(
        architecture=encoder.config.model_type,
        hidden_size=embedding.embedding_dim,
        num_layers=num_layers,
        vocab_size=embedding.num_embeddings,
        embedding_sha256=hashlib.sha256(rounded.numpy().tobytes()).hexdigest()[:16],
    )
