"""LoRA task adapters in Hugging Face PEFT's own format: what `PeftModel.from_pretrained(model, DIR)` reads over
`AutoModelForTokenClassification`, and what xling reads back from such a folder.

PEFT's folder holds `adapter_config.json` (`peft_type: LORA`, `task_type: TOKEN_CLS`, the rank, alpha, dropout,
target modules and layers) and `adapter_model.safetensors` with each update as
`base_model.model.<prefix>.<layers>.<L>.<projection>.lora_A.weight` (and `lora_B`: the family's module paths,
BERT's `encoder.layer.<L>.attention.self.query`; one LoRA of ModernBERT's `attn.Wqkv` for its thirds), the
tagging head, modules to save, as `base_model.model.classifier.weight` (and ModernBERT's `head.dense`,
`head.norm`). PEFT leaves the labels to the base model's config,
and Transformers takes a folder with a `config.json` beside `adapter_config.json` for a whole model with an adapter
in it (so `pipeline()` would look for the base's weights there): an export writes no `config.json`, its labels go
into xling's head record (`head_config.json`) and its card's snippets pass them as `id2label`. A PEFT folder from
elsewhere says its labels in a `config.json` of its own (`id2label`), which is read. The arithmetic is the same:
`W x + (alpha / r) B A x` on the projections named.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import torch

from xling.adapters.files import CONFIG_FILE, FOREIGN_CONFIG_FILE, HEAD_CONFIG_FILE, HEAD_WEIGHTS_FILE, WEIGHTS_FILE
from xling.adapters.heads import TaggingHead, TaggingHeadConfig, head_transform, read_head_config
from xling.adapters.lora.config import TARGETS, LoraConfig
from xling.adapters.record import AdapterRecord
from xling.adapters.weights import load_fitting, read_weights
from xling.errors import XlingError
from xling.fileio import atomic_directory, read_json
from xling.models.families import FAMILIES, ModelFamily
from xling.models.loading import hub_id_of_label
from xling.options import shown
from xling.records import from_record, typed

PEFT_WEIGHTS = "adapter_model.safetensors"
LABELS_FILE = "config.json"  # a token-classification model's config (id2label), where others' PEFT folders say labels
# the classifier, and the transform before it where the family's token classifier has one (`heads.HeadTransform`)
HEAD = re.compile(r"^base_model\.model\.((?:classifier|head\.dense|head\.norm)\.(?:weight|bias))$")
# PEFT options whose other values need what xling's LoRA does not do
SUPPORTED = {"bias": "none", "use_dora": False, "use_rslora": False, "fan_in_fan_out": False, "lora_bias": False}


def is_peft(record: dict) -> bool:
    return "peft_type" in record


def projection_modules(family: ModelFamily) -> dict[str, list[str]]:
    """Each projection module's path within a layer of `family` (`attention.self.query`, DistilBERT's
    `attention.q_lin`) and the LoRA targets it computes: all three for one Linear computing query, key and value
    (ModernBERT's `attn.Wqkv`), in that order."""
    modules: dict[str, list[str]] = {}
    for target in TARGETS:
        modules.setdefault(family.paths.projection(target), []).append(target)
    return modules


def update_key(family: ModelFamily) -> re.Pattern:
    """A PEFT LoRA weight's name in `family`: its layer, projection module and matrix."""
    modules = "|".join(re.escape(path) for path in projection_modules(family))
    layers = re.escape(family.paths.layers)
    return re.compile(rf"^base_model\.model\.\w+\.{layers}\.(\d+)\.({modules})\.(lora_[AB])\.weight$")


def peft_updates(
    saved: dict[str, torch.Tensor], family: ModelFamily, config: LoraConfig, directory: Path
) -> tuple[dict[str, torch.Tensor], list[str], int]:
    """xling's LoRA updates as PEFT's (`<layer>.<module>.lora_A`), the modules adapted, and how many times xling's
    rank PEFT's is: one Linear computing query, key and value gets one update of them all (`joined`)."""
    computes = projection_modules(family)
    modules = {module: [t for t in computed if t in config.targets] for module, computed in computes.items()}
    modules = {module: targets for module, targets in modules.items() if targets}
    parts: dict[tuple[str, str], dict[str, dict[str, torch.Tensor]]] = {}
    for key, tensor in saved.items():
        if (found := re.fullmatch(r"updates\.(\d+)_(\w+)\.(lora_[AB])", key)) is None or found[2] not in TARGETS:
            raise XlingError(f"{directory / WEIGHTS_FILE} holds {shown(key)}, which is no LoRA update: not exported")
        layer, target, matrix = found.groups()
        module = next(module for module, targets in modules.items() if target in targets)
        parts.setdefault((layer, module), {}).setdefault(target, {})[matrix] = tensor
    updates = {}
    for (layer, module), by_target in parts.items():
        a, b = joined([by_target[t] for t in modules[module]], modules[module], computes[module])
        updates[f"{layer}.{module}.lora_A"], updates[f"{layer}.{module}.lora_B"] = a, b
    return updates, list(modules), max(len(targets) for targets in modules.values())


def joined(parts: list[dict[str, torch.Tensor]], targets: list[str], computed: list[str]) -> tuple[torch.Tensor, ...]:
    """One Linear's LoRA (A, B) from its `targets`' updates, where it computes several projections (`computed`, in
    the order of its output's parts): A stacks theirs, B puts each target's in its part of the output and its block
    of the rank (zeros elsewhere), so that B A is their updates side by side."""
    if len(computed) == 1:
        return parts[0]["lora_A"], parts[0]["lora_B"]
    rank, width = parts[0]["lora_A"].shape[0], parts[0]["lora_B"].shape[0]
    b = parts[0]["lora_B"].new_zeros(width * len(computed), rank * len(parts))
    for block, (target, part) in enumerate(zip(targets, parts)):
        third = computed.index(target)
        b[third * width : (third + 1) * width, block * rank : (block + 1) * rank] = part["lora_B"]
    return torch.cat([part["lora_A"] for part in parts]), b


def base_prefix(model_type: str) -> str:
    """The name Transformers gives a family's encoder inside its task models (`bert`, `roberta`, `deberta`)."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING

    return MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING[type(AutoConfig.for_model(model_type))].base_model_prefix


def export_peft(directory: Path, target: Path, overwrite: bool = False, extra_files: dict[str, str] | None = None):
    """Write the xling LoRA task adapter saved in `directory`, with its head, as PEFT saves one."""
    directory = Path(directory)
    where = str(directory / CONFIG_FILE)
    saved = AdapterRecord.read(directory / CONFIG_FILE)
    if saved.kind != "lora" or not (directory / HEAD_WEIGHTS_FILE).is_file():
        raise XlingError(f"{directory}: only LoRA task adapters export to PEFT, not {shown(saved.kind)} adapters")
    config = from_record(LoraConfig, saved.settings(where), where)  # every value of the type and range xling saves
    shape = saved.base_model.fingerprint.shape(where)
    family = FAMILIES[shape.architecture]
    layers = [layer for layer in range(shape.num_layers) if layer not in config.leave_out]
    updates, modules, widen = peft_updates(read_weights(directory / WEIGHTS_FILE), family, config, directory)
    head_config = read_head_config(directory)
    name = saved.base_model.name
    peft_config = {
        "peft_type": "LORA",
        "task_type": "TOKEN_CLS",
        "r": config.rank * widen,
        "lora_alpha": config.alpha * widen,  # PEFT scales by lora_alpha / r: xling's alpha / rank
        "lora_dropout": config.dropout,
        "target_modules": [module.rsplit(".", 1)[-1] for module in modules],
        "layers_to_transform": layers if config.leave_out else None,
        "modules_to_save": ["head", "classifier"] if head_config.transform else ["classifier"],
        "base_model_name_or_path": saved.base_model.hub_id or hub_id_of_label(name) or name or None,
        "inference_mode": True,
        **SUPPORTED,
    }
    prefix = f"base_model.model.{base_prefix(shape.architecture)}.{family.paths.layers}"
    weights = {f"{prefix}.{key}.weight": tensor for key, tensor in updates.items()}
    for key, tensor in read_weights(directory / HEAD_WEIGHTS_FILE).items():
        weights[f"base_model.model.{key}"] = tensor
    from safetensors.torch import save

    with atomic_directory(Path(target), overwrite=overwrite, replaces=(FOREIGN_CONFIG_FILE,)) as staging:
        (staging / FOREIGN_CONFIG_FILE).write_text(json.dumps(peft_config, indent=2) + "\n")
        (staging / PEFT_WEIGHTS).write_bytes(save({k: v.contiguous() for k, v in weights.items()}, {"format": "pt"}))
        (staging / HEAD_CONFIG_FILE).write_text(json.dumps(head_config.to_dict(), indent=2) + "\n")
        for file_name, text in (extra_files or {}).items():
            (staging / file_name).write_text(text, encoding="utf-8")
    return Path(target)


def config_from_peft(record: dict, directory: Path, num_layers: int, family: ModelFamily) -> LoraConfig:
    """xling's LoRA config for a PEFT LoRA config over `family`, or one line naming what xling does not support."""
    where = str(directory / FOREIGN_CONFIG_FILE)
    named = {path.rsplit(".", 1)[-1]: targets for path, targets in projection_modules(family).items()}
    if record.get("peft_type") != "LORA":
        raise XlingError(f"{where}: a PEFT {shown(record.get('peft_type'))} adapter; xling reads PEFT's LoRA only")
    unsupported = [f"{k}={shown(record[k])}" for k, v in SUPPORTED.items() if k in record and record[k] != v]
    targets = record.get("target_modules")
    targets = [targets] if isinstance(targets, str) else targets
    if not isinstance(targets, list) or any(t not in named for t in targets):
        unsupported.append(f"target_modules={shown(targets)} (xling adapts {', '.join(named)})")
    if unsupported:
        raise XlingError(f"{where}: PEFT options xling does not support: {', '.join(unsupported)}")
    kept = typed(record, "layers_to_transform", int | list[int], None, where)
    kept = list(range(num_layers)) if kept is None else [kept] if isinstance(kept, int) else kept
    values = {
        "rank": record.get("r", 8),
        "alpha": record.get("lora_alpha", 8),
        "dropout": record.get("lora_dropout", 0.0),
        "targets": [target for module in targets for target in named[module]],
        "leave_out": [layer for layer in range(num_layers) if layer not in kept],
    }
    return from_record(LoraConfig, values, where)


def load_peft(model, directory: Path, record: dict, name: str, head: bool = True) -> str:
    """A PEFT LoRA folder into `model` as xling's LoRA adapter `name`, with its classifier as the tagging head where
    the folder holds one and says its labels (`peft_head_config`). A LoRA of one Linear computing query, key and
    value is each third's: A shared, B's rows of that third (exact, at PEFT's rank for each)."""
    config = config_from_peft(record, directory, model.num_layers, model.family)
    state = read_weights(directory / PEFT_WEIGHTS)
    computes = projection_modules(model.family)
    pattern, updates, head_weights, unread = update_key(model.family), {}, {}, []
    for key, tensor in state.items():
        if found := pattern.match(key):
            layer, module, matrix = found.groups()
            for third, target in enumerate(computes[module]):
                part = tensor.chunk(len(computes[module]))[third] if matrix == "lora_B" else tensor
                updates[f"updates.{layer}_{target}.{matrix}"] = part
        elif found := HEAD.match(key):
            head_weights[found.group(1)] = tensor
        else:
            unread.append(key)
    if unread:  # a weight of the adapter xling would leave out: its outputs would not be PEFT's
        more = f" and {len(unread) - 2} more" if len(unread) > 2 else ""
        raise XlingError(f"{directory / PEFT_WEIGHTS} holds tensors xling does not read: {', '.join(unread[:2])}{more}")
    adapter = model.add_adapter(name, config)
    with model.adding(name):
        load_fitting(adapter, updates, f"{directory}: the LoRA updates")
        if head and head_weights and (config := peft_head_config(directory)) is not None:
            model.add_head(name, peft_head(directory, config, head_weights, model))
    return name


def peft_head_config(directory: Path) -> TaggingHeadConfig | None:
    """The config of a PEFT folder's classifier: its labels in id order as `config.json` names them (`id2label`, a
    folder from elsewhere), or xling's head record of an export; None when the folder says no labels."""
    if (directory / LABELS_FILE).is_file():
        record = read_json(directory / LABELS_FILE)
        id2label = record.get("id2label") if isinstance(record, dict) else None
        if not isinstance(id2label, dict) or sorted(map(str, id2label)) != sorted(str(i) for i in range(len(id2label))):
            raise XlingError(f"{directory / LABELS_FILE}: id2label must name every label id 0..N-1")
        labels = [id2label[key] for key in sorted(id2label, key=int)]
        return from_record(TaggingHeadConfig, {"labels": labels}, str(directory / LABELS_FILE))
    if (directory / HEAD_CONFIG_FILE).is_file():
        config = read_head_config(directory)
        return config if isinstance(config, TaggingHeadConfig) else None
    return None


def peft_head(directory: Path, config: TaggingHeadConfig, weights: dict[str, torch.Tensor], model) -> TaggingHead:
    """The tagging head of a PEFT folder's weights; its transform, where the family has one, is the base model's
    (what Transformers builds) unless xling's head record says it."""
    transform = config.transform or head_transform(model)
    head = TaggingHead(model.hidden_size, replace(config, transform=transform))
    load_fitting(head, weights, f"{directory}: the classifier")
    return head
