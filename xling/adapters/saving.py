"""Save and load adapters, fusions and their heads: one directory each.

A directory holds `xling_adapter.json` (kind, config, xling version, base model name
and fingerprint) and `xling_adapter.safetensors`; a task adapter's head adds
`head_config.json` and `head_model.safetensors`. Loading checks the fingerprint
against the model before any weight is touched.
"""

from __future__ import annotations

from pathlib import Path

import torch

from xling.adapters.adapterhub import is_adapterhub, load_adapterhub
from xling.adapters.composition import check_name
from xling.adapters.files import CONFIG_FILE, FOREIGN_CONFIG_FILE, HEAD_CONFIG_FILE, HEAD_WEIGHTS_FILE, WEIGHTS_FILE
from xling.adapters.fusion import FusionConfig
from xling.adapters.heads import build_head, read_head_config
from xling.adapters.lora.peft import is_peft, load_peft
from xling.adapters.model import AdaptedModel
from xling.adapters.record import AdapterMetadata, AdapterRecord, BaseModelRecord
from xling.adapters.registry import KINDS, adapter_kind, kind_of
from xling.adapters.weights import check_base_model, load_fitting, read_weights, uninitialised, write_weights
from xling.errors import XlingError, naming
from xling.fileio import atomic_directory, read_json, write_json_atomic
from xling.pretrained import check_shipped_files, is_pretrained
from xling.roles import LANG, TASK, Role


def _record(model: AdaptedModel, kind: str, name: str, metadata: AdapterMetadata | None, **settings) -> AdapterRecord:
    """xling_adapter.json: what was saved, by which xling, for which base model."""
    encoder = model.encoder
    base = BaseModelRecord(
        getattr(encoder, "name_or_path", ""), model.fingerprint, getattr(encoder, "xling_hub_id", None)
    )
    return AdapterRecord.made(kind, name, base, metadata=metadata or AdapterMetadata(), **settings)


def foreign_config(path: Path) -> dict:
    """PEFT's or AdapterHub's `adapter_config.json` of the adapter at `path`, which has no xling record."""
    config_file = Path(path) / FOREIGN_CONFIG_FILE
    if not config_file.is_file():
        raise XlingError(f"no adapter at {path} (no {CONFIG_FILE}, nor PEFT's or AdapterHub's {FOREIGN_CONFIG_FILE})")
    record = read_json(config_file)
    if not isinstance(record, dict):
        raise XlingError(f"{config_file} is not an adapter config (a JSON object)")
    return record


def write_head(directory: Path, head: torch.nn.Module) -> None:
    write_json_atomic(directory / HEAD_CONFIG_FILE, head.config.to_dict())
    write_weights(directory / HEAD_WEIGHTS_FILE, head.state_dict())


def load_head(model: AdaptedModel, directory: Path, name: str) -> None:
    with uninitialised():
        head = build_head(read_head_config(directory), model, str(directory / HEAD_CONFIG_FILE))
    load_fitting(head, read_weights(directory / HEAD_WEIGHTS_FILE), str(directory / HEAD_WEIGHTS_FILE))
    model.add_head(name, head)


def _write(
    staging: Path, record: AdapterRecord, weights: dict | None, head: torch.nn.Module | None, extra_files: dict | None
) -> None:
    for file_name, text in (extra_files or {}).items():
        (staging / file_name).write_text(text, encoding="utf-8")
    record.write(staging / CONFIG_FILE)
    if weights is not None:
        write_weights(staging / WEIGHTS_FILE, weights)
    if head is not None:
        write_head(staging, head)


def save(
    model: AdaptedModel,
    name: str,
    directory: Path,
    overwrite: bool = False,
    metadata: AdapterMetadata | None = None,
    extra_files: dict[str, str] | None = None,
) -> Path:
    """Save adapter, fusion or head `name` (an adapter or fusion with its head, if any) to `directory`,
    atomically; `extra_files`: file name -> text."""
    if name in model.adapters:
        module = model.adapters[name]
        record = _record(model, kind_of(module.config).name, name, metadata, config=module.config.to_dict())
    elif name in model.fusions:
        module = model.fusions[name]
        record = _record(model, "fusion", name, metadata, adapters=module.adapter_names, config=module.config.to_dict())
    elif name in model.heads:  # a head that works on the frozen base model alone
        module, record = None, _record(model, "head", name, metadata)
    else:
        raise XlingError(f"no adapter, fusion or head named {name!r} to save")
    head = model.heads[name] if name in model.heads else None
    with atomic_directory(Path(directory), overwrite=overwrite, replaces=(CONFIG_FILE,)) as staging:
        _write(staging, record, module.state_dict() if module is not None else None, head, extra_files)
    return Path(directory)


def foreign_role(directory: Path, record: dict) -> Role | None:
    """What a PEFT or AdapterHub folder is for, as far as it says: a token-classification task or a tagging head
    makes a task adapter; AdapterHub's invertible adapter or masked-LM head a language adapter; else None."""
    if is_peft(record):
        return TASK if record.get("task_type") == "TOKEN_CLS" else None
    head = read_json(directory / HEAD_CONFIG_FILE) if (directory / HEAD_CONFIG_FILE).is_file() else {}
    head_settings = head.get("config") if isinstance(head, dict) else None
    head_type = head_settings.get("head_type") if isinstance(head_settings, dict) else None
    if head_type == "tagging":
        return TASK
    config = record.get("config")
    return LANG if head_type == "masked_lm" or (isinstance(config, dict) and config.get("inv_adapter")) else None


def load_foreign(
    model: AdaptedModel, directory: Path, record: dict, name: str | None, head: bool, role: Role | None = None
) -> str:
    """An AdapterHub or PEFT adapter (their `adapter_config.json`) into `model`, refused when it says it is not of
    `role`; returns its name."""
    found = foreign_role(directory, record) if role is not None else None
    if found is not None and found is not role:
        raise XlingError(
            f"{directory / FOREIGN_CONFIG_FILE} is a {found.title}, not a {role.title}: give a {role.title} here"
        )
    if is_adapterhub(record):
        return load_adapterhub(model, directory, record, name, head)
    if is_peft(record):
        with naming(str(directory / FOREIGN_CONFIG_FILE)):
            return load_peft(model, directory, record, check_name(name or "peft"), head)
    raise XlingError(
        f"{directory / FOREIGN_CONFIG_FILE} is neither PEFT's (peft_type) nor AdapterHub's (config, version): not loaded"
    )


def load(
    model: AdaptedModel, directory: Path, name: str | None = None, head: bool = True, role: Role | None = None
) -> str:
    """Load an adapter or fusion saved by xling (or an AdapterHub or PEFT adapter) into `model`; returns its name.

    `head=False` leaves a saved head out (a language adapter's masked-LM head serves training only); `role`: the
    role it must have been saved as (a task adapter is no language adapter)."""
    directory = Path(directory)
    config_file = directory / CONFIG_FILE
    if not config_file.is_file():
        return load_foreign(model, directory, foreign_config(directory), name, head, role)
    where = str(config_file)
    saved = AdapterRecord.read(config_file)
    saved.check_role(role, where)
    if is_pretrained(directory):  # a changed byte in the package would otherwise tag silently
        check_shipped_files(directory)
    kind = saved.kind if saved.kind in ("fusion", "head") else adapter_kind(saved.kind, str(directory)).name
    check_base_model(model, saved.base_model, directory)
    name = name or saved.name
    if kind == "head":
        load_head(model, directory, name)
        return name
    with naming(where), uninitialised():
        if kind in KINDS:
            module = model.add_adapter(check_name(name), KINDS[kind].config.from_dict(saved.settings(where), where))
        else:
            adapters = [check_name(a) for a in saved.fused(where)]
            module = model.add_fusion(adapters, FusionConfig.from_dict(saved.settings(where), where))
            name = ",".join(adapters)
    with model.adding(name):
        load_fitting(module, read_weights(directory / WEIGHTS_FILE), str(directory / WEIGHTS_FILE))
        if head and (directory / HEAD_CONFIG_FILE).is_file():
            load_head(model, directory, name)
    return name
