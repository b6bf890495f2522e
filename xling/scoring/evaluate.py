"""`xling evaluate ner`: tag a labelled data set with a trained task and score it."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xling.adapters import Stack
from xling.adapters.saving import load
from xling.data.labels import relabel
from xling.data.sources import load_ner
from xling.errors import XlingError
from xling.scoring.entities import score
from xling.tagging.predict import predict_tags
from xling.tasks import load_task_model
from xling.workspace import Workspace, check_lang


@dataclass
class EvaluationOptions:
    data: str
    lang: str
    task_adapter: str = "ner-en"  # name in the workspace, or a directory
    model: str = "e5-small"
    workspace: str | None = None
    use_lang_adapter: bool = True
    drop_labels: list[str] = field(default_factory=list)
    label_map: dict[str, str] = field(default_factory=dict)
    batch_size: int = 64


def lang_adapter_dir(workspace: Workspace, lang: str) -> Path:
    directory = workspace.adapter_dir("lang", lang)
    if not directory.is_dir():
        raise XlingError(f"no language adapter for {lang!r} in {directory.parent}; train it with: xling train-lang {lang} CORPUS")
    return directory


def task_dir(workspace: Workspace, name: str) -> Path:
    path = Path(name)
    if path.is_dir():
        return path
    directory = workspace.adapter_dir("task", name)
    if not directory.is_dir():
        raise XlingError(f"no task adapter {name!r} in {directory.parent}; train it with: xling train-task ner --lang LANG --train FILE --dev FILE")
    return directory


def evaluate(options: EvaluationOptions) -> dict:
    lang = check_lang(options.lang)
    workspace = Workspace(options.workspace, options.model)
    directory = task_dir(workspace, options.task_adapter)
    sentences = relabel(load_ner(options.data, "validation"), options.drop_labels, options.label_map)
    model, tokenizer, record = load_task_model(options.model, directory)
    setup = None
    if record.method == "adapter":
        setup = record.name
        if options.use_lang_adapter:
            lang_name = load(model, lang_adapter_dir(workspace, lang), name=f"lang-{lang}")
            setup = Stack(lang_name, record.name)
    model.set_active(setup)
    predicted = predict_tags(model, tokenizer, [s.tokens for s in sentences], record.name, options.batch_size)
    result = score([s.tags for s in sentences], [[tag for tag, _ in p] for p in predicted])
    result.update({
        "data": options.data, "lang": lang, "task_adapter": record.name, "method": record.method,
        "setup": repr(setup) if setup is not None else "no adapters",
    })
    return result
