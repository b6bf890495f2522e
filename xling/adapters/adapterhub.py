"""Adapters to and from the AdapterHub `adapters` library.

Its directories hold `adapter_config.json` (with `config` and `version: adapters.*`)
and weights in `pytorch_adapter.bin` or `adapter.safetensors`; a tagging head adds
`head_config.json` and `pytorch_model_head.bin` or `model_head.safetensors`. Each adapter
kind converts its own config and weight names (`<kind>/adapterhub.py`: bottleneck and LoRA);
the directories, heads and base-model checks are common. `export_adapterhub` writes the other
way, from the saved files alone (no model is loaded).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import torch

from xling.adapters.composition import check_name
from xling.adapters.files import CONFIG_FILE, FOREIGN_CONFIG_FILE, HEAD_CONFIG_FILE, HEAD_WEIGHTS_FILE, WEIGHTS_FILE
from xling.adapters.heads import TaggingHead, TaggingHeadConfig, read_head_config
from xling.adapters.model import AdaptedModel
from xling.adapters.record import AdapterRecord, BaseModelRecord
from xling.adapters.registry import KINDS, adapter_kind
from xling.adapters.weights import check_base_model, load_fitting, read_weights, write_weights
from xling.errors import XlingError, naming
from xling.fileio import atomic_directory, read_json, write_json_atomic
from xling.models.families import FAMILIES
from xling.models.loading import hub_id_of_label
from xling.records import from_record, typed

# Where the library keeps an adapter's weights: safetensors (`use_safetensors=True`), else a tensor pickle.
_WEIGHTS_FILES = ("adapter.safetensors", "pytorch_adapter.bin", "adapter_model.safetensors")
# Where an export keeps xling's record of the base model (its name and weight fingerprint); the library ignores it.
XLING_BASE_MODEL = "xling_base_model"
# The version of the library whose layout export writes (and whose loading the bench script checks).
EXPORT_VERSION = "adapters.1.3.0"


def is_adapterhub(record: dict) -> bool:
    version = str(record.get("version", ""))
    return "config" in record and (version.startswith("adapters.") or version.startswith("adapter-transformers"))


def _conversion(raw: dict, directory: Path):
    """The conversion module of the kind whose library `architecture` a saved config names."""
    architecture = raw.get("architecture") or "bottleneck"
    for conversion in (kind.conversion() for kind in KINDS.values()):
        if conversion.ARCHITECTURE == architecture:
            return conversion
    raise XlingError(
        f"{directory}: AdapterHub {architecture!r} adapters are not supported, only {', '.join(KINDS)} adapters"
    )


def _read_weights(directory: Path) -> dict[str, torch.Tensor]:

    for file_name in _WEIGHTS_FILES:
        if (directory / file_name).is_file():
            return read_weights(directory / file_name)
    raise XlingError(f"{directory}: no {' or '.join(_WEIGHTS_FILES)}")


def check_adapterhub_model(record: dict, model: AdaptedModel, directory: Path) -> None:
    """An AdapterHub adapter says the architecture, hidden size and (often) name of its base model: all must fit.
    One that xling exported also carries the fingerprint of its base model's weights, which decides instead of
    the name (a local copy of the same weights fits whatever its path)."""
    if isinstance(record.get(XLING_BASE_MODEL), dict):
        where = f"{directory / FOREIGN_CONFIG_FILE}: {XLING_BASE_MODEL}"
        check_base_model(model, from_record(BaseModelRecord, record[XLING_BASE_MODEL], where), directory)
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


def head_dropout(config: dict, model: AdaptedModel, where: str) -> float:
    """The head's dropout as the library takes it: its own, else the model's classifier or hidden dropout, else 0
    (the library saves `dropout_prob: null` for a head added without one)."""
    if (own := typed(config, "dropout_prob", float, None, where)) is not None:
        return own
    for value in (getattr(model.config, k, None) for k in _MODEL_DROPOUTS):
        if value is not None:
            return float(value)
    return 0.0


def load_adapterhub_head(model: AdaptedModel, directory: Path, saved_name: str, name: str) -> None:
    """The library's one-layer tagging head (Sequential(Dropout, Linear)) as xling's tagging head."""
    where = str(directory / HEAD_CONFIG_FILE)
    record = read_json(directory / HEAD_CONFIG_FILE)
    if not isinstance(record, dict):
        raise XlingError(f"{where}: not a JSON object")
    config = typed(record, "config", dict, {}, where)
    kind, layers = typed(config, "head_type", str, None, where), typed(config, "layers", int, 1, where)
    if kind != "tagging" or layers != 1:
        raise XlingError(
            f"{directory}: its head ({kind}, {layers} layers) has no xling equivalent; xling loads one-layer tagging heads"
        )
    label2id = typed(config, "label2id", dict[str, int], {}, where)
    labels = [label for label, _ in sorted(label2id.items(), key=lambda item: item[1])]
    count = typed(config, "num_labels", int, len(labels), where)
    if len(labels) != count or len(set(label2id.values())) < len(labels):
        raise XlingError(f"{where}: {len(labels)} labels for num_labels {count}, or label ids given twice")
    prefix = f"heads.{saved_name}.1."
    weights = {
        f"classifier.{k.removeprefix(prefix)}": v for k, v in _head_weights(directory).items() if k.startswith(prefix)
    }
    head_config = from_record(
        TaggingHeadConfig, {"labels": labels, "dropout": head_dropout(config, model, where)}, where
    )
    head = TaggingHead(model.hidden_size, head_config)
    load_fitting(head, weights, f"{directory}: the head")
    model.add_head(name, head)


def load_adapterhub(
    model: AdaptedModel, directory: Path, record: dict, name: str | None = None, head: bool = True
) -> str:
    """An AdapterHub adapter, with its tagging head when it has one (unless `head` is off)."""
    where = str(directory / FOREIGN_CONFIG_FILE)
    raw = typed(record, "config", dict, None, where)
    if raw is None:
        raise XlingError(f"{where}: 'config' must be the adapter's settings (a JSON object)")
    conversion = _conversion(raw, directory)
    config = conversion.config_from(raw, directory)
    check_adapterhub_model(record, model, directory)
    saved_name = typed(record, "name", str, None, where) or directory.name
    weights = {}
    for key, tensor in _read_weights(directory).items():
        renamed = conversion.weight_name_from(key, saved_name)
        if renamed is not None:
            weights[renamed] = tensor
    with naming(where):
        name = check_name(name or saved_name)
        adapter = model.add_adapter(name, config)
    with model.adding(name):
        load_fitting(adapter, weights, f"{directory}: the adapter")
        if head and (directory / HEAD_CONFIG_FILE).is_file():
            load_adapterhub_head(model, directory, saved_name, name)
    return name


def export_adapterhub(
    directory: Path, target: Path, overwrite: bool = False, extra_files: dict[str, str] | None = None
) -> Path:
    """Write the xling bottleneck adapter saved in `directory` (with its tagging head, if it has one) as the
    `adapters` library saves one, so that its `model.load_adapter(target)` loads it; `extra_files` (name: text,
    a model card say) go beside. A language adapter's masked-LM head stays behind: it serves its training
    only, and the library stacks language adapters without one."""

    directory = Path(directory)
    saved = AdapterRecord.read(directory / CONFIG_FILE) if (directory / CONFIG_FILE).is_file() else None
    if saved is None or saved.kind not in KINDS:
        raise XlingError(
            f"{directory}: only {' and '.join(KINDS)} adapters export to the adapters library, "
            f"not {saved.kind if saved else 'this'}"
        )
    kind = adapter_kind(saved.kind)
    conversion, config_file = kind.conversion(), str(directory / CONFIG_FILE)
    config = kind.config.from_dict(saved.settings(config_file), config_file)
    base, name = saved.base_model, saved.name
    shape = base.fingerprint.shape(config_file)
    model_type = shape.architecture
    family = FAMILIES.get(model_type)
    if family is None or family.adapterhub_class is None:
        exported = ", ".join(t for t, f in FAMILIES.items() if f.adapterhub_class)
        raise XlingError(f"{directory}: exporting adapters of {model_type} models is not supported (only {exported})")
    about = {
        "hidden_size": shape.hidden_size,
        "model_class": family.adapterhub_class,
        "model_name": base.hub_id or hub_id_of_label(base.name) or base.name,  # what the library loads
        "model_type": model_type,
        "name": name,
        "version": EXPORT_VERSION,
        XLING_BASE_MODEL: asdict(base),
    }
    weights = {conversion.weight_name_to(k, name): v for k, v in read_weights(directory / WEIGHTS_FILE).items()}
    with atomic_directory(Path(target), overwrite=overwrite, replaces=(FOREIGN_CONFIG_FILE,)) as staging:
        write_json_atomic(
            staging / FOREIGN_CONFIG_FILE,
            {"config": conversion.config_to(config, directory), **about},
        )
        write_weights(staging / "pytorch_adapter.bin", weights)  # what `load_adapter` reads by default
        write_weights(staging / "adapter.safetensors", weights)  # what it reads with use_safetensors=True
        for file_name, text in (extra_files or {}).items():
            (staging / file_name).write_text(text, encoding="utf-8")
        head = read_head_config(directory) if (directory / HEAD_CONFIG_FILE).is_file() else None
        if isinstance(head, TaggingHeadConfig):  # a masked-LM head serves training only: left behind
            labels = head.labels
            config = {
                "head_type": "tagging",
                "num_labels": len(labels),
                "layers": 1,
                "activation_function": "tanh",
                "dropout_prob": head.dropout,
                "label2id": {label: i for i, label in enumerate(labels)},
            }
            write_json_atomic(staging / "head_config.json", {"config": config, **about})
            # The library's one-layer tagging head is Sequential(Dropout, Linear): the Linear is module 1.
            head_weights = {
                f"heads.{name}.1.{k.removeprefix('classifier.')}": v
                for k, v in read_weights(directory / HEAD_WEIGHTS_FILE).items()
            }
            write_weights(staging / "pytorch_model_head.bin", head_weights)
            write_weights(staging / "model_head.safetensors", head_weights)
    return Path(target)
