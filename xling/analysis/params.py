"""Added parameters per adapter and per task, as a share of the base model."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from safetensors import safe_open

from xling.adapters.files import HEAD_WEIGHTS_FILE, WEIGHTS_FILE
from xling.roles import LANG, ROLES
from xling.workspace import Workspace

WEIGHT_FILES = (WEIGHTS_FILE, HEAD_WEIGHTS_FILE)


@dataclass
class ParameterRow:
    kind: str  # the role: lang, task, fusion
    name: str
    adapter: int
    head: int
    used: int  # what tagging loads: a language adapter's masked-LM head serves training only
    share: float  # of the base model


@dataclass
class ParameterTable:
    base_parameters: int
    rows: list[ParameterRow]
    added: int
    total_relative: float  # the base and everything added, over the base
    json: str | None = None


def count_file(path: Path) -> int:
    if not path.is_file():
        return 0
    with safe_open(str(path), framework="pt") as weights:
        return sum(math.prod(weights.get_slice(key).get_shape()) for key in weights.keys())


def parameter_table(workspace: Workspace, base_parameters: int) -> ParameterTable:
    """Every saved adapter, fusion and head in the workspace with its size relative to the base model."""
    rows = []
    for role in ROLES:
        root = workspace.model_dir / role.name
        for directory in (
            sorted(p for p in root.glob("*") if p.is_dir() and not p.name.endswith(".partial")) if root.is_dir() else []
        ):
            if (directory / "encoder").is_dir():
                continue  # full fine-tuning: a whole model, not an addition
            adapter = count_file(directory / WEIGHT_FILES[0])
            head = count_file(directory / WEIGHT_FILES[1])
            # A language adapter's masked-LM head serves training only; tagging never loads it.
            used = adapter if role is LANG else adapter + head
            rows.append(ParameterRow(role.name, directory.name, adapter, head, used, used / base_parameters))
    added = sum(r.used for r in rows)
    return ParameterTable(base_parameters, rows, added, (base_parameters + added) / base_parameters)
