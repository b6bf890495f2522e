"""Checkpoints: nested state (tensors, numbers, strings) as safetensors plus JSON.

A checkpoint is one directory written atomically, so an interruption at any moment
(even `kill -9`) leaves the previous checkpoint intact.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from xling.errors import XlingError
from xling.fileio import atomic_directory, parse_json, write_json_atomic
from xling.records import from_record, set_fields
from xling.train.log_lines import LoopState

TENSOR_TAG = "__tensor__"


def _split(tree, tensors: dict, prefix: str = ""):
    """Replace tensors by references, collecting them in `tensors`."""
    if isinstance(tree, torch.Tensor):
        tensors[prefix] = tree.detach().cpu().contiguous()
        return {TENSOR_TAG: prefix}
    if isinstance(tree, dict):
        return {
            "__dict__": [
                [_split(k, tensors, f"{prefix}.k{i}"), _split(v, tensors, f"{prefix}.{i}")]
                for i, (k, v) in enumerate(tree.items())
            ]
        }
    if isinstance(tree, (list, tuple)):
        return [_split(v, tensors, f"{prefix}.{i}") for i, v in enumerate(tree)]
    return tree


def _join(tree, tensors: dict):
    if isinstance(tree, dict) and TENSOR_TAG in tree:
        return tensors[tree[TENSOR_TAG]]
    if isinstance(tree, dict) and "__dict__" in tree:
        return {_join(k, tensors): _join(v, tensors) for k, v in tree["__dict__"]}
    if isinstance(tree, list):
        return [_join(v, tensors) for v in tree]
    return tree


def save_checkpoint(directory: Path, state: dict) -> None:
    with atomic_directory(Path(directory), overwrite=True) as staging:
        tensors: dict = {}
        skeleton = _split(state, tensors)
        save_file(tensors, str(staging / "tensors.safetensors"))
        write_json_atomic(staging / "state.json", skeleton)


def saved_value(directory: Path, key: str) -> str | None:
    """One text value at a checkpoint's top level (its precision), read without its tensors; None if there is
    none (a damaged checkpoint is said when it loads)."""
    file = Path(directory) / "state.json"
    try:
        pairs = parse_json(file.read_text())["__dict__"] if file.is_file() else []
        value = next((v for k, v in pairs if k == key), None)
    except (ValueError, UnicodeDecodeError, RecursionError, KeyError, TypeError):
        return None
    return value if isinstance(value, str) else None


@dataclass
class Checkpoint:
    """A run's resumable state, as `checkpoint/` holds it: the trainable weights, the optimiser's and schedule's
    own state (torch's dicts), the random streams, the loop's position and the precision it computes in."""

    weights: dict[str, torch.Tensor]
    optimizer: dict
    scheduler: dict
    rng: torch.Tensor
    state: LoopState
    precision: str | None = None
    cuda_rng: list[torch.Tensor] | None = None
    best_weights: dict[str, torch.Tensor] | None = None  # the selected evaluation's, where it is not the last

    def save(self, directory: Path) -> None:
        save_checkpoint(directory, set_fields(self))

    @classmethod
    def load(cls, directory: Path) -> Checkpoint | None:
        """The saved checkpoint, None if there is none; a damaged one is an error naming what."""
        saved = load_checkpoint(directory)
        if saved is None:
            return None
        unknown = set(saved) - {f.name for f in fields(cls)}
        if unknown:
            raise XlingError(f"checkpoint state.json holds what no checkpoint does: {', '.join(sorted(unknown))}")
        return cls(**saved | {"state": from_record(LoopState, saved["state"], "its checkpoint's state")})


def load_checkpoint(directory: Path) -> dict | None:
    """The saved state, None if there is none; a damaged one is an error naming the file."""
    directory = Path(directory)
    if not (directory / "state.json").is_file():
        return None
    try:
        tensors = load_file(str(directory / "tensors.safetensors"))
    except Exception as err:  # safetensors raises its own types for missing or truncated files
        raise XlingError(f"checkpoint tensors unreadable: {str(err).splitlines()[0]}") from None
    try:
        state = _join(parse_json((directory / "state.json").read_text()), tensors)
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError, RecursionError) as err:
        raise XlingError(f"checkpoint state.json unreadable: {err}") from None
    if not isinstance(state, dict) or not {"weights", "optimizer", "scheduler", "rng", "state"} <= set(state):
        raise XlingError("checkpoint state.json lacks the weights, optimiser, scheduler or step")
    return state
