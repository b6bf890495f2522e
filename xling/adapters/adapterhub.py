"""Bottleneck adapters to and from the AdapterHub `adapters` library.

Its directories hold `adapter_config.json` (with `config` and `version: adapters.*`)
and weights in `pytorch_adapter.bin` or `adapter.safetensors`; a tagging head adds
`head_config.json` and `pytorch_model_head.bin` or `model_head.safetensors`. The Pfeiffer (SeqBn) and Houlsby
(DoubleSeqBn) layouts, with or without the NICE invertible adapter, map onto xling's
bottleneck adapters; the arithmetic matches theirs. `export_adapterhub` writes the other
way, from the saved files alone (no model is loaded).
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from safetensors.torch import save_file

from xling.adapters.bottleneck import BottleneckConfig
from xling.adapters.composition import check_name
from xling.adapters.heads import TaggingHead, TaggingHeadConfig
from xling.adapters.model import AdaptedModel
from xling.adapters.weights import (
    CONFIG_FILE,
    HEAD_CONFIG_FILE,
    HEAD_WEIGHTS_FILE,
    WEIGHTS_FILE,
    check_base_model,
    read_weights,
)
from xling.errors import XlingError
from xling.fileio import atomic_directory, read_json, write_json_atomic

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
# Where the library keeps an adapter's weights: safetensors (`use_safetensors=True`), else a tensor pickle.
_WEIGHTS_FILES = ("adapter.safetensors", "pytorch_adapter.bin", "adapter_model.safetensors")
# Where an export keeps xling's record of the base model (its name and weight fingerprint); the library ignores it.
XLING_BASE_MODEL = "xling_base_model"
# The version of the library whose layout export writes (and whose loading the bench script checks).
EXPORT_VERSION = "adapters.1.3.0"
# Model types whose layers the library names `encoder.layer.N.(attention.)output` as BERT does, and its class
# with flexible heads for each (a head loads only into the class it names).
_EXPORT_CLASSES = {
    "bert": "BertAdapterModel",
    "roberta": "RobertaAdapterModel",
    "xlm-roberta": "XLMRobertaAdapterModel",
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

    for file_name in _WEIGHTS_FILES:
        if (directory / file_name).is_file():
            return read_weights(directory / file_name)
    raise XlingError(f"{directory}: no {' or '.join(_WEIGHTS_FILES)}")


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
    """An AdapterHub adapter says the architecture, hidden size and (often) name of its base model: all must fit.
    One that xling exported also carries the fingerprint of its base model's weights, which decides instead of
    the name (a local copy of the same weights fits whatever its path)."""
    if isinstance(record.get(XLING_BASE_MODEL), dict):
        check_base_model(model, {"base_model": record[XLING_BASE_MODEL]}, directory)
        return
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


_MODEL_DROPOUTS = ("classifier_dropout", "hidden_dropout_prob")


def _head_weights(directory: Path) -> dict[str, torch.Tensor]:
    for file_name in ("model_head.safetensors", "pytorch_model_head.bin"):
        if (directory / file_name).is_file():
            return read_weights(directory / file_name)
    raise XlingError(f"{directory}: head_config.json without model_head.safetensors or pytorch_model_head.bin")


def head_dropout(config: dict, model: AdaptedModel) -> float:
    """The head's dropout as the library takes it: its own, else the model's classifier or hidden dropout, else 0
    (the library saves `dropout_prob: null` for a head added without one)."""
    for value in (config.get("dropout_prob"), *(getattr(model.config, k, None) for k in _MODEL_DROPOUTS)):
        if value is not None:
            return float(value)
    return 0.0


def load_adapterhub_head(model: AdaptedModel, directory: Path, saved_name: str, name: str) -> None:
    """The library's one-layer tagging head (Sequential(Dropout, Linear)) as xling's tagging head."""
    config = read_json(directory / HEAD_CONFIG_FILE).get("config") or {}
    kind, layers = config.get("head_type"), config.get("layers", 1)
    if kind != "tagging" or layers != 1:
        raise XlingError(
            f"{directory}: its head ({kind}, {layers} layers) has no xling equivalent; xling loads one-layer tagging heads"
        )
    label2id = config.get("label2id") or {}
    labels = [label for label, _ in sorted(label2id.items(), key=lambda item: item[1])]
    if len(labels) != config.get("num_labels", len(labels)):
        raise XlingError(
            f"{directory}: head_config.json has {len(labels)} labels for num_labels {config['num_labels']}"
        )
    prefix = f"heads.{saved_name}.1."
    weights = {
        f"classifier.{k.removeprefix(prefix)}": v for k, v in _head_weights(directory).items() if k.startswith(prefix)
    }
    head = TaggingHead(model.hidden_size, TaggingHeadConfig(labels=labels, dropout=head_dropout(config, model)))
    missing, unexpected = head.load_state_dict(weights, strict=False)
    if missing or unexpected:
        raise XlingError(f"{directory}: the head's weights do not fit its config (missing {missing[:2]})")
    model.add_head(name, head)


def load_adapterhub(
    model: AdaptedModel, directory: Path, record: dict, name: str | None = None, head: bool = True
) -> str:
    """An AdapterHub adapter, with its tagging head when it has one (unless `head` is off)."""
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
    if head and (directory / HEAD_CONFIG_FILE).is_file():
        try:
            load_adapterhub_head(model, directory, saved_name, name)
        except Exception:
            model.delete(name)
            raise
    return name


def _export_config(config: dict, directory: Path) -> dict:
    """The library's bottleneck config for an xling one (the inverse of `_config`)."""
    unsupported = [
        f"{k}={config[k]!r}" for k, v in (("share_every", 1), ("train_layer_norms", False)) if config[k] != v
    ]
    if config["invertible"] and config["invertible_non_linearity"] != config["non_linearity"]:
        unsupported.append("an invertible non-linearity other than the adapter's")
    if unsupported:
        raise XlingError(f"{directory}: the adapters library has no equivalent of {', '.join(unsupported)}")
    placement = next(key for key, value in _PLACEMENTS.items() if value == config["placement"])
    return {
        **_REQUIRED,
        "mh_adapter": placement[0],
        "output_adapter": placement[1],
        "original_ln_before": placement[2],
        "reduction_factor": config["reduction_factor"],
        "non_linearity": config["non_linearity"],
        "leave_out": config["leave_out"],
        "inv_adapter": "nice" if config["invertible"] else None,
        "inv_adapter_reduction_factor": config["invertible_reduction_factor"] if config["invertible"] else None,
        "init_weights": "bert",
        "dropout": 0.0,
    }


def _export_name(key: str, name: str) -> str:
    """xling parameter name -> the library's, under the base model (the inverse of `_rename`)."""
    block = re.fullmatch(r"blocks\.(\d+)_(attn|ffn)\.(down|up)\.(weight|bias)", key)
    if block:
        layer, site, part, kind = block.groups()
        where = "attention.output" if site == "attn" else "output"
        module = "adapter_down.0" if part == "down" else "adapter_up"
        return f"encoder.layer.{layer}.{where}.adapters.{name}.{module}.{kind}"
    return f"invertible_adapters.{name}.{key.removeprefix('invertible.')}"


def export_adapterhub(
    directory: Path, target: Path, overwrite: bool = False, extra_files: dict[str, str] | None = None
) -> Path:
    """Write the xling bottleneck adapter saved in `directory` (with its tagging head, if it has one) as the
    `adapters` library saves one, so that its `model.load_adapter(target)` loads it; `extra_files` (name: text,
    a model card say) go beside. A language adapter's masked-LM head stays behind: it serves its training
    only, and the library stacks language adapters without one."""

    directory = Path(directory)
    record = read_json(directory / CONFIG_FILE) if (directory / CONFIG_FILE).is_file() else {}
    if record.get("kind") != "bottleneck":
        raise XlingError(
            f"{directory}: only bottleneck adapters export to the adapters library, not {record.get('kind') or 'this'}"
        )
    base = record["base_model"]
    model_type = base["fingerprint"]["architecture"]
    if model_type not in _EXPORT_CLASSES:
        raise XlingError(
            f"{directory}: exporting adapters of {model_type} models is not supported (only {', '.join(_EXPORT_CLASSES)})"
        )
    name = record["name"]
    about = {
        "hidden_size": base["fingerprint"]["hidden_size"],
        "model_class": _EXPORT_CLASSES[model_type],
        "model_name": base.get("name", ""),
        "model_type": model_type,
        "name": name,
        "version": EXPORT_VERSION,
        XLING_BASE_MODEL: base,
    }
    weights = {_export_name(k, name): v for k, v in read_weights(directory / WEIGHTS_FILE).items()}
    with atomic_directory(Path(target), overwrite=overwrite, replaces=(CONFIG_FILE,)) as staging:
        write_json_atomic(staging / CONFIG_FILE, {"config": _export_config(record["config"], directory), **about})
        torch.save(weights, staging / "pytorch_adapter.bin")  # what `load_adapter` reads by default
        save_file(weights, str(staging / "adapter.safetensors"))  # what it reads with use_safetensors=True
        for file_name, text in (extra_files or {}).items():
            (staging / file_name).write_text(text, encoding="utf-8")
        head = read_json(directory / HEAD_CONFIG_FILE) if (directory / HEAD_CONFIG_FILE).is_file() else {}
        if head and head.get("kind") != "mlm":
            if head.get("kind") != "tagging":
                raise XlingError(f"{directory}: a {head.get('kind')} head has no equivalent in the adapters library")
            labels = head["labels"]
            config = {
                "head_type": "tagging",
                "num_labels": len(labels),
                "layers": 1,
                "activation_function": "tanh",
                "dropout_prob": head["dropout"],
                "label2id": {label: i for i, label in enumerate(labels)},
            }
            write_json_atomic(staging / "head_config.json", {"config": config, **about})
            # The library's one-layer tagging head is Sequential(Dropout, Linear): the Linear is module 1.
            head_weights = {
                f"heads.{name}.1.{k.removeprefix('classifier.')}": v
                for k, v in read_weights(directory / HEAD_WEIGHTS_FILE).items()
            }
            torch.save(head_weights, staging / "pytorch_model_head.bin")
            save_file(head_weights, str(staging / "model_head.safetensors"))
    return Path(target)
