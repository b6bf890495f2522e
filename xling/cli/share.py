"""`xling push` (an adapter to the Hugging Face Hub, with its model card) and `xling export` (an adapter in
another library's layout)."""

from __future__ import annotations

from enum import Enum

import typer
from rich.console import Console

from xling.cli.options import MODEL, WORKSPACE, argument, option
from xling.exporting import FORMATS as EXPORT_FORMATS
from xling.exporting import ExportOptions, export
from xling.hub import push
from xling.options import build, defaults
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


EXPORT = defaults(ExportOptions)
ExportFormat = Enum("ExportFormat", {name: name for name in EXPORT_FORMATS}, type=str)


def export_command(
    adapter: str = argument(EXPORT, "adapter"),
    target: str = argument(EXPORT, "target"),
    format: ExportFormat = option(EXPORT, "format", "--format"),
    overwrite: bool = option(EXPORT, "overwrite"),
    lang: str = option(EXPORT, "lang"),
    lang_adapter: str = option(EXPORT, "lang_adapter"),
    int8: bool = option(EXPORT, "int8"),
    check_data: str = option(EXPORT, "check_data"),
    model: str = MODEL,
    workspace: str = WORKSPACE,
):
    """Write an adapter for another library (`--format adapterhub`: `model.load_adapter(DIR)` in `adapters`), or
    a tagger as one ONNX graph (`--format onnx`, for ONNX Runtime)."""
    options = build(ExportOptions, {**locals(), "format": format.value if format else None})
    how = export(options)
    Console(stderr=True).print(f"[green]wrote[/] {target}: use it with {how}", highlight=False)
