"""`xling push` (an adapter to the Hugging Face Hub, with its model card) and `xling export` (an adapter in
another library's layout)."""

from __future__ import annotations

from rich.console import Console

from xling.cli.options import command
from xling.exporting import ExportOptions, PushOptions, export, push


@command(PushOptions)
def push_command(options: PushOptions):
    """Upload an adapter to the Hugging Face Hub; load it anywhere as hf:ORG/NAME."""
    url = push(options)
    Console(stderr=True).print(
        f"[green]pushed[/] {options.adapter} to {url}; use it as hf:{options.repo_id}", highlight=False
    )


@command(ExportOptions)
def export_command(options: ExportOptions):
    """Write an adapter for another library (`--format adapterhub`: `model.load_adapter(DIR)` in `adapters`), or
    a tagger as one ONNX graph (`--format onnx`, for ONNX Runtime)."""
    how = export(options)
    Console(stderr=True).print(f"[green]wrote[/] {options.target}: use it with {how}", highlight=False)
