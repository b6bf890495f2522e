"""Trained tasks as saved in the workspace: a task adapter with its head, or a baseline.

Every task directory has `task.json` (name, task, language, method, the language
adapter it was trained over, labels, the decoder its dev F1 was measured with). `adapter` tasks are adapter directories with a
head; `head` tasks hold just the head; `full` tasks hold the whole fine-tuned encoder
(`encoder/`) and the head.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from xling.adapters import AdaptedModel, Fuse
from xling.adapters.composition import check_name
from xling.adapters.files import CONFIG_FILE, FOREIGN_CONFIG_FILE
from xling.adapters.record import AdapterMetadata, AdapterRecord
from xling.adapters.saving import HEAD_CONFIG_FILE, load, load_head, save, write_head
from xling.data.decoding import DEFAULT_DECODER, check_decoder
from xling.data.labels import check_labels
from xling.errors import XlingError
from xling.fileio import atomic_directory, read_json
from xling.methods import METHODS, check_method
from xling.models import load_model
from xling.models.loading import no_transformers_bars
from xling.names import check_lang
from xling.records import from_record, read_record
from xling.roles import FUSION, TASK, TASK_FILE, Role


@dataclass
class TaskRecord:
    name: str
    task: str
    lang: str
    method: str
    lang_adapter: str | None
    labels: list[str]
    decoder: str = DEFAULT_DECODER  # chosen at training (dev F1 was measured with it); tagging uses it unless told

    def __post_init__(self):
        check_name(self.name)
        check_lang(self.lang)
        check_labels(self.labels)
        check_method(self.method)
        check_decoder(self.decoder)

    @classmethod
    def read(cls, directory: Path) -> TaskRecord:
        """The task trained in `directory`: xling's `task.json`, or a PEFT folder's labels (`peft_task`)."""
        file = Path(directory) / TASK_FILE
        if not file.is_file() and (peft := peft_task(Path(directory))) is not None:
            return peft
        if not file.is_file():
            raise XlingError(
                f"no trained task at {directory}; train one with: xling train-task ner --lang LANG --train FILE --dev FILE"
            )
        return read_record(file, cls)


def peft_task(directory: Path) -> TaskRecord | None:
    """The task of a PEFT LoRA token-classification folder that says its labels (`peft_head_config`), saved without
    xling's record: its language is not known (`und`), and it tags without a language adapter."""
    from xling.adapters.lora.peft import is_peft, peft_head_config

    config = directory / FOREIGN_CONFIG_FILE
    record = read_json(config) if config.is_file() else {}
    if not (isinstance(record, dict) and is_peft(record)) or (head := peft_head_config(directory)) is None:
        return None
    task = {"name": "peft", "task": "ner", "lang": "und", "method": "adapter", "lang_adapter": None}
    return from_record(TaskRecord, task | {"labels": head.labels}, str(directory))


def task_text(record: TaskRecord) -> str:
    """`task.json` as xling writes it."""
    return json.dumps(asdict(record), indent=2) + "\n"


def save_task(
    model: AdaptedModel, tokenizer, record: TaskRecord, target: Path, overwrite: bool, extra_files: dict[str, str]
) -> None:
    extra = {**extra_files, TASK_FILE: task_text(record)}
    metadata = AdapterMetadata(role=TASK.word, task=record.task, lang=record.lang)
    if not METHODS[record.method].trains_encoder:  # the task adapter and its head, or the head alone
        save(model, record.name, target, overwrite, metadata, extra)
    else:
        with atomic_directory(Path(target), overwrite=overwrite, replaces=(TASK_FILE,)) as staging:
            with no_transformers_bars():
                model.encoder.save_pretrained(staging / "encoder")
            tokenizer.save_pretrained(staging / "encoder")
            write_head(staging, model.heads[record.name])
            for file_name, text in extra.items():
                (staging / file_name).write_text(text, encoding="utf-8")


def load_task_model(
    model_spec: str, directory: Path, inference_only: bool = False
) -> tuple[AdaptedModel, object, TaskRecord]:
    """The model with the task loaded (adapter and head, or fine-tuned encoder and head); `inference_only` as
    `load_model`'s."""
    record = TaskRecord.read(directory)
    if METHODS[record.method].trains_encoder:
        encoder, tokenizer = load_model(str(Path(directory) / "encoder"))
        model = AdaptedModel(encoder)
        load_head(model, Path(directory), record.name)
    else:
        encoder, tokenizer = load_model(model_spec, inference_only=inference_only)
        model = AdaptedModel(encoder)
        load(model, Path(directory), name=record.name, role=TASK)
    if record.name not in model.heads:
        raise XlingError(f"{directory}: the task's head is missing ({HEAD_CONFIG_FILE})")
    if (head_labels := model.heads[record.name].labels) != record.labels:  # one of them edited, or another's
        raise XlingError(
            f"{Path(directory) / TASK_FILE} says labels {', '.join(record.labels)} but its head "
            f"({HEAD_CONFIG_FILE}) tags {', '.join(head_labels)}: not loaded"
        )
    return model, tokenizer, record


def trained_over_lang_adapter(role: Role, directory: Path) -> bool:
    """Whether the task adapter or fusion saved in `directory` was trained over a language adapter, as its record
    says; a fusion saved before its record said so is taken to have been (as it was tagged then)."""
    if role is FUSION:
        return AdapterRecord.read(directory / CONFIG_FILE).metadata.over_lang_adapter is not False
    return TaskRecord.read(directory).lang_adapter is not None


def load_fusion_model(model_spec: str, workspace, name: str, inference_only: bool = False):
    """(model, tokenizer, head name, Fuse setup) for a fusion saved in the workspace."""
    directory = workspace.fusion(name)
    fused = AdapterRecord.read(directory / CONFIG_FILE).fused(str(directory / CONFIG_FILE))
    encoder, tokenizer = load_model(model_spec, inference_only=inference_only)
    model = AdaptedModel(encoder)
    for adapter in fused:
        load(model, workspace.task(adapter), name=adapter, role=TASK)
    fuse_name = load(model, directory, role=FUSION)
    return model, tokenizer, fuse_name, Fuse(*fused)
