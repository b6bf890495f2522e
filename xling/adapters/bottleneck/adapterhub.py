"""Bottleneck adapters in the `adapters` library's layout: the Pfeiffer (SeqBn) and Houlsby (DoubleSeqBn)
configs, with or without the NICE invertible adapter, and their weights' names. The arithmetic matches theirs."""

from __future__ import annotations

import re
from pathlib import Path

from xling.adapters.bottleneck.config import BottleneckConfig
from xling.adapters.files import FOREIGN_CONFIG_FILE
from xling.errors import XlingError
from xling.options import shown
from xling.records import from_record, typed

ARCHITECTURE = "bottleneck"  # the library's `architecture` (older configs leave it out)

# Options whose other values would need modules xling does not have.
_REQUIRED = {
    "ln_before": False,
    "ln_after": False,
    "use_gating": False,
    "phm_layer": False,
    "is_parallel": False,
    "adapter_residual_before_ln": False,
    "residual_before_ln": True,
    "original_ln_after": True,
    "scaling": 1.0,
}
_PLACEMENTS = {
    # (mh_adapter, output_adapter, original_ln_before) -> placement
    (False, True, True): "pfeiffer",
    (True, True, False): "houlsby",
}


def config_from(raw: dict, directory: Path) -> BottleneckConfig:
    where = str(directory / FOREIGN_CONFIG_FILE)
    unsupported = [f"{k}={shown(raw[k])}" for k, v in _REQUIRED.items() if k in raw and raw[k] != v]
    key = tuple(typed(raw, name, bool, None, where) for name in ("mh_adapter", "output_adapter", "original_ln_before"))
    if key not in _PLACEMENTS:
        unsupported.append(f"mh_adapter/output_adapter/original_ln_before={key}")
    if raw.get("inv_adapter") not in (None, "nice"):
        unsupported.append(f"inv_adapter={shown(raw['inv_adapter'])}")
    if isinstance(raw.get("reduction_factor"), dict):
        unsupported.append("per-layer reduction_factor")
    if unsupported:
        raise XlingError(f"{directory}: AdapterHub adapter options xling does not support: {', '.join(unsupported)}")
    non_linearity = typed(raw, "non_linearity", str, "relu", where).lower()
    values = {
        "placement": _PLACEMENTS[key],
        "reduction_factor": typed(raw, "reduction_factor", float, None, where),
        "non_linearity": non_linearity,
        "leave_out": typed(raw, "leave_out", list[int], [], where),
        "invertible": raw.get("inv_adapter") == "nice",
        "invertible_reduction_factor": typed(raw, "inv_adapter_reduction_factor", float, 2.0, where),
        "invertible_non_linearity": non_linearity,
    }
    return from_record(BottleneckConfig, values, where)


def weight_name_from(key: str, saved_name: str) -> str | None:
    """AdapterHub parameter name -> xling parameter name (None: not an adapter weight)."""
    name = re.escape(saved_name)
    block = re.search(rf"layer\.(\d+)\.(.*)adapters\.{name}\.(adapter_down\.0|adapter_up)\.(weight|bias)$", key)
    if block:
        layer, where, part, kind = block.groups()
        site = "attn" if "attention" in where else "ffn"
        return f"blocks.{layer}_{site}.{'down' if part.startswith('adapter_down') else 'up'}.{kind}"
    inv = re.search(rf"invertible_adapters\.{name}\.([FG]\.[02]\.(?:weight|bias))$", key)
    return f"invertible.{inv.group(1)}" if inv else None


def config_to(config: BottleneckConfig, directory: Path) -> dict:
    """The library's bottleneck config for an xling one (the inverse of `config_from`)."""
    unsupported = [f"share_every={config.share_every!r}"] if config.share_every != 1 else []
    unsupported += ["train_layer_norms=True"] if config.train_layer_norms else []
    if config.invertible and config.invertible_non_linearity != config.non_linearity:
        unsupported.append("an invertible non-linearity other than the adapter's")
    if unsupported:
        raise XlingError(f"{directory}: the adapters library has no equivalent of {', '.join(unsupported)}")
    placement = next(key for key, value in _PLACEMENTS.items() if value == config.placement)
    return {
        **_REQUIRED,
        "mh_adapter": placement[0],
        "output_adapter": placement[1],
        "original_ln_before": placement[2],
        "reduction_factor": config.reduction_factor,
        "non_linearity": config.non_linearity,
        "leave_out": list(config.leave_out),
        "inv_adapter": "nice" if config.invertible else None,
        "inv_adapter_reduction_factor": config.invertible_reduction_factor if config.invertible else None,
        "init_weights": "bert",
        "dropout": 0.0,
    }


def weight_name_to(key: str, name: str) -> str:
    """xling parameter name -> the library's, under the base model (the inverse of `weight_name_from`)."""
    block = re.fullmatch(r"blocks\.(\d+)_(attn|ffn)\.(down|up)\.(weight|bias)", key)
    if block:
        layer, site, part, kind = block.groups()
        where = "attention.output" if site == "attn" else "output"
        module = "adapter_down.0" if part == "down" else "adapter_up"
        return f"encoder.layer.{layer}.{where}.adapters.{name}.{module}.{kind}"
    return f"invertible_adapters.{name}.{key.removeprefix('invertible.')}"
