"""LoRA adapters in the `adapters` library's layout (its `LoRAConfig` on the self-attention's matrices), and
their weights' names. The arithmetic matches theirs for one LoRA per projection."""

from __future__ import annotations

import re
from pathlib import Path

from xling.adapters.files import FOREIGN_CONFIG_FILE
from xling.adapters.lora.config import LoraConfig
from xling.errors import XlingError
from xling.options import shown
from xling.records import from_record, typed

ARCHITECTURE = "lora"
_MATRICES = {"q": "query", "k": "key", "v": "value"}
# Options whose other values would need modules xling does not have.
_REQUIRED = {
    "selfattn_lora": True,
    "intermediate_lora": False,
    "output_lora": False,
    "composition_mode": "add",
    "use_gating": False,
    "use_dora": False,
    "vera_d": None,
    "vera_b": None,
}


def config_from(raw: dict, directory: Path) -> LoraConfig:
    """xling's config for the library's LoRA config."""
    where = str(directory / FOREIGN_CONFIG_FILE)
    matrices = typed(raw, "attn_matrices", list[str], ["q", "v"], where)
    unsupported = [f"{k}={shown(raw[k])}" for k, v in _REQUIRED.items() if k in raw and raw[k] != v]
    unsupported += [f"attn_matrices={shown(m)}" for m in matrices if m not in _MATRICES]
    if unsupported:
        raise XlingError(f"{directory}: AdapterHub LoRA options xling does not support: {', '.join(unsupported)}")
    values = {
        "rank": typed(raw, "r", int, 8, where),
        "alpha": typed(raw, "alpha", float, 8.0, where),
        "dropout": typed(raw, "dropout", float, 0.0, where),
        "targets": [_MATRICES[m] for m in matrices],
        "leave_out": typed(raw, "leave_out", list[int], [], where),
    }
    return from_record(LoraConfig, values, where)


def weight_name_from(key: str, saved_name: str) -> str | None:
    """AdapterHub parameter name -> xling parameter name (None: not an adapter weight)."""
    name = re.escape(saved_name)
    found = re.search(rf"layer\.(\d+)\.attention\.self\.(query|key|value)\.loras\.{name}\.(lora_[AB])$", key)
    return f"updates.{found.group(1)}_{found.group(2)}.{found.group(3)}" if found else None


def config_to(config: LoraConfig, directory: Path) -> dict:
    """The library's LoRA config for an xling one (the inverse of `config_from`)."""
    matrices = {target: letter for letter, target in _MATRICES.items()}
    return {
        **_REQUIRED,
        "architecture": ARCHITECTURE,
        "r": config.rank,
        "alpha": config.alpha,
        "dropout": config.dropout,
        "attn_matrices": [matrices[t] for t in config.targets],
        "leave_out": list(config.leave_out),
        "init_weights": "lora",
    }


def weight_name_to(key: str, name: str) -> str:
    """xling parameter name -> the library's, under the base model (the inverse of `weight_name_from`)."""
    layer, target, part = re.fullmatch(r"updates\.(\d+)_(query|key|value)\.(lora_[AB])", key).groups()
    return f"encoder.layer.{layer}.attention.self.{target}.loras.{name}.{part}"
