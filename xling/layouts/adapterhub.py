"""The `adapterhub` layout: a language or task adapter as the AdapterHub `adapters` library saves one
(`xling.adapters.adapterhub`), its card loading it there."""

from __future__ import annotations

from pathlib import Path

from xling.exporting import ExportOptions, PushOptions
from xling.layouts import export_adapter, push_adapter
from xling.roles import task_record
from xling.workspace import Workspace


def write(directory: Path, target: Path, repo_id: str | None = None, overwrite: bool = False) -> None:
    from xling.adapters.adapterhub import export_adapterhub
    from xling.train.cards.adapter import CardLibrary, model_card
    from xling.train.cards.common import CARD_FILE
    from xling.train.report import read_report

    library = CardLibrary("adapter-transformers", "adapter-transformers", loads_from_repo=True)
    card = model_card(read_report(directory), repo_id, library)
    export_adapterhub(directory, target, overwrite=overwrite, extra_files={CARD_FILE: card} | task_record(directory))


def export(options: ExportOptions, workspace: Workspace) -> str:
    target = export_adapter(write, options, workspace)
    return f"model.load_adapter({str(target)!r})"


def push_folder(options: PushOptions, staging: Path) -> tuple[Path, dict[str, str]]:
    return push_adapter(write, options, staging)
