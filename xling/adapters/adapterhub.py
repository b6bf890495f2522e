"""Load bottleneck adapters saved by the AdapterHub `adapters` library.

Its directories hold `adapter_config.json` (with `config` and `version: adapters.*`)
and weights in `pytorch_adapter.bin` or `adapter_model.safetensors`. The Pfeiffer
(SeqBn) and Houlsby (DoubleSeqBn) layouts, with or without the NICE invertible
adapter, map onto xling's bottleneck adapters; the arithmetic matches theirs.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from xling.adapters.bottleneck import BottleneckConfig
from xling.adapters.model import AdaptedModel, check_name
from xling.errors import XlingError

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


def is_adapterhub(record: dict) -> bool:
    version = str(record.get("version", ""))
    return "config" in record and (version.startswith("adapters.") or version.startswith("adapter-transformers"))


def _config(raw: dict, directory: Path) -> BottleneckConfig:
    if raw.get("architecture") not in (None, "bottleneck"):
        raise XlingError(
            f"{directory}: AdapterHub {raw['architecture']!r} adapters are not supported, only bottleneck adapters"
        )
    unsupported = [f"{k}={raw[k]!r}" for k, v in _REQUIRED.items() if k in raw and raw[k] != v]
    key = (raw.get("mh_adapter"), raw.get("output_adapter"), raw.get("original_ln_before"))
    if key not in _PLACEMENTS:
        unsupported.append(f"mh_adapter/output_adapter/original_ln_before={key}")
    if raw.get("inv_adapter") not in (None, "nice"):
        unsupported.append(f"inv_adapter={raw['inv_adapter']!r}")
    if isinstance(raw.get("reduction_factor"), dict):
        unsupported.append("per-layer reduction_factor")
    if unsupported:
        raise XlingError(f"{directory}: AdapterHub adapter options xling does not support: {', '.join(unsupported)}")
    return BottleneckConfig(
        placement=_PLACEMENTS[key],
        reduction_factor=raw["reduction_factor"],
        non_linearity=raw["non_linearity"].lower(),
        leave_out=list(raw.get("leave_out") or []),
        invertible=raw.get("inv_adapter") == "nice",
        invertible_reduction_factor=raw.get("inv_adapter_reduction_factor") or 2,
        invertible_non_linearity=raw["non_linearity"].lower(),
    )


def _read_weights(directory: Path) -> dict[str, torch.Tensor]:
    from xling.adapters.saving import read_weights

    for file_name in ("adapter_model.safetensors", "pytorch_adapter.bin"):
        if (directory / file_name).is_file():
            return read_weights(directory / file_name)
    raise XlingError(f"{directory}: no pytorch_adapter.bin or adapter_model.safetensors")


def _rename(key: str, saved_name: str) -> str | None:
    """AdapterHub parameter name -> xling parameter name (None: not an adapter weight)."""
    name = re.escape(saved_name)
    block = re.search(rf"layer\.(\d+)\.(.*)adapters\.{name}\.(adapter_down\.0|adapter_up)\.(weight|bias)$", key)
    if block:
        layer, where, part, kind = block.groups()
        site = "attn" if "attention" in where else "ffn"
        return f"blocks.{layer}_{site}.{'down' if part.startswith('adapter_down') else 'up'}.{kind}"
    inv = re.search(rf"invertible_adapters\.{name}\.([FG]\.[02]\.(?:weight|bias))$", key)
    return f"invertible.{inv.group(1)}" if inv else None


def check_adapterhub_model(record: dict, model: AdaptedModel, directory: Path) -> None:
    """An AdapterHub adapter says the architecture, hidden size and (often) name of its base model: all must fit."""
    if record.get("hidden_size") not in (None, model.hidden_size):
        raise XlingError(
            f"{directory} was trained for hidden size {record['hidden_size']}, the model has {model.hidden_size}"
        )
    if record.get("model_type") not in (None, model.config.model_type):
        raise XlingError(
            f"{directory} was trained on a {record['model_type']} model, the model is {model.config.model_type}"
        )
    # Hub id "org/name" against a local copy "<cache>/name[-sha]": the last component must agree.
    saved = str(record.get("model_name") or "").rstrip("/").split("/")[-1].lower()
    loaded = Path(str(getattr(model.encoder, "name_or_path", "") or "")).name.lower()
    if saved and loaded and not loaded.startswith(saved) and not saved.startswith(loaded):
        raise XlingError(f"{directory} was trained on {record['model_name']}, not on the loaded model {loaded}")


def load_adapterhub(model: AdaptedModel, directory: Path, record: dict, name: str | None = None) -> str:
    config = _config(record["config"], directory)
    check_adapterhub_model(record, model, directory)
    saved_name = record.get("name") or directory.name
    name = check_name(name or saved_name)
    weights = {}
    for key, tensor in _read_weights(directory).items():
        renamed = _rename(key, saved_name)
        if renamed is not None:
            weights[renamed] = tensor
    adapter = model.add_adapter(name, config)
    missing, unexpected = adapter.load_state_dict(weights, strict=False)
    if missing or unexpected:
        model.delete(name)
        raise XlingError(
            f"{directory}: weights do not match the adapter config (missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    return name
