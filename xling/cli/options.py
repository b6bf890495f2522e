"""Options several commands share, declared once."""
from __future__ import annotations

import typer

from xling.adapters import BottleneckConfig
from xling.adapters.bottleneck.config import PRESETS

MODEL = typer.Option("e5-small", "--model", "-m", help="Base model: e5-small (embedded), a Hugging Face id or a local directory.")
WORKSPACE = typer.Option(None, "--workspace", "-w", help="Workspace root (default: $XLING_HOME/workspace, else ./xling-workspace).")
DEVICE = typer.Option("auto", "--device", help="auto (GPU when present), cpu or cuda.")


def adapter_config(preset: str, reduction_factor: float | None, non_linearity: str | None,
                   leave_out: str | None, share_every: int | None) -> BottleneckConfig:
    overrides = {}
    if reduction_factor is not None:
        overrides["reduction_factor"] = reduction_factor
    if non_linearity is not None:
        overrides["non_linearity"] = non_linearity
    if leave_out:
        overrides["leave_out"] = [int(i) for i in leave_out.split(",")]
    if share_every is not None:
        overrides["share_every"] = share_every
    return BottleneckConfig.preset(preset, **overrides)


PRESET_HELP = f"Adapter preset: {', '.join(PRESETS)}."


