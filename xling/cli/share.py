"""`xling push` (an adapter to the Hugging Face Hub, with its model card) and `xling export` (an adapter in
another library's layout)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer
from rich.console import Console

from xling.cli.options import MODEL, WORKSPACE
from xling.hub import CARD_FILE, model_card, push, read_report
from xling.workspace import Workspace


def push_command(
    adapter: str = typer.Argument(..., help="A trained adapter, task or fusion: a workspace name or a directory."),
    repo_id: str = typer.Argument(..., help="The Hub model repository, ORG/NAME (created if new)."),
    private: bool = typer.Option(False, "--private", help="Create the repository private."),
    token: str = typer.Option(
        None, "--token", help="Hub token (default: HF_TOKEN, else the one `hf auth login` saved)."
    ),
    model: str = MODEL,
    workspace: str = WORKSPACE,
):
    """Upload an adapter to the Hugging Face Hub; load it anywhere as hf:ORG/NAME."""
    url = push(Workspace(workspace, model).adapter(adapter), repo_id, private=private, token=token)
    Console(stderr=True).print(f"[green]pushed[/] {adapter} to {url}; use it as hf:{repo_id}", highlight=False)


class ExportFormat(str, Enum):
    adapterhub = "adapterhub"


def export_command(
    adapter: str = typer.Argument(..., help="A trained language or task adapter: a workspace name or a directory."),
    target: Path = typer.Argument(..., help="The directory to write (written whole, or not at all)."),
    export_format: ExportFormat = typer.Option(..., "--format", help="adapterhub: the AdapterHub adapters library."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a directory an earlier export wrote."),
    model: str = MODEL,
    workspace: str = WORKSPACE,
):
    """Write an adapter (with its head and model card) for another library: `model.load_adapter(DIR)` in
    `adapters`."""
    from xling.adapters.adapterhub import export_adapterhub

    directory = Workspace(workspace, model).adapter(adapter)
    card = model_card(read_report(directory))
    export_adapterhub(directory, target, overwrite=overwrite, extra_files={CARD_FILE: card})
    Console(stderr=True).print(
        f"[green]wrote[/] {target}: load it with model.load_adapter({str(target)!r})", highlight=False
    )
