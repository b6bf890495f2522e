"""`xling push`: an adapter to the Hugging Face Hub, with its model card."""

from __future__ import annotations

import typer
from rich.console import Console

from xling.cli.options import MODEL, WORKSPACE
from xling.hub import push
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
