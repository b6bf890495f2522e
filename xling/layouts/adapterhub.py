"""The `adapterhub` layout: a language or task adapter as the AdapterHub `adapters` library saves one
(`xling.adapters.adapterhub`), its card loading it there."""

from __future__ import annotations

from pathlib import Path

from xling.layouts import adapter_layout
from xling.roles import task_record


def write(directory: Path, target: Path, repo_id: str | None = None, overwrite: bool = False) -> None:
    from xling.adapters.adapterhub import export_adapterhub
    from xling.train.cards.adapter import CardLibrary, model_card
    from xling.train.cards.common import CARD_FILE
    from xling.train.report import RunReport

    library = CardLibrary("adapter-transformers", "adapter-transformers", loads_from_repo=True)
    card = model_card(RunReport.read(directory), repo_id, library)
    export_adapterhub(directory, target, overwrite=overwrite, extra_files={CARD_FILE: card} | task_record(directory))


export, push_folder = adapter_layout(write, "model.load_adapter({target})")
