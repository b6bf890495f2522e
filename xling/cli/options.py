"""Options several commands share, declared once."""

from __future__ import annotations

from enum import Enum

import typer

from xling.adapters import BottleneckConfig
from xling.adapters.bottleneck.config import PRESETS
from xling.models.loading import DEFAULT_MODEL
from xling.tagging.decoding import DECODERS, DEFAULT_DECODER

MODEL = typer.Option(
    DEFAULT_MODEL, "--model", "-m", help="Base model: e5-small (embedded), a Hugging Face id or a local directory."
)
WORKSPACE = typer.Option(
    None, "--workspace", "-w", help="Workspace root (default: $XLING_HOME/workspace, else ./xling-workspace)."
)
DEVICE = typer.Option("auto", "--device", help="auto (GPU when present), cpu or cuda.")
PRESET_HELP = f"Adapter preset: {', '.join(PRESETS)}."
DECODER = typer.Option(
    DEFAULT_DECODER,
    "--decoder",
    help=f"From word probabilities to IOB2 tags: {', '.join(DECODERS)} "
    "(viterbi: the best sequence where I-X follows only B-X or I-X).",
)


def adapter_config(
    preset: str,
    reduction_factor: float | None,
    non_linearity: str | None,
    leave_out: str | None,
    share_every: int | None,
) -> BottleneckConfig:
    """The preset with the command line's overrides; `leave_out` is comma-separated layer indices."""
    layers = [int(i) for i in leave_out.split(",")] if leave_out else None
    return BottleneckConfig.preset(
        preset,
        reduction_factor=reduction_factor,
        non_linearity=non_linearity,
        leave_out=layers,
        share_every=share_every,
    )


class Task(str, Enum):
    ner = "ner"


def comma_list(text: str | None) -> list[str]:
    """`MISC, DATE` -> ["MISC", "DATE"]; nothing -> []."""
    return [part.strip() for part in text.split(",") if part.strip()] if text else []
