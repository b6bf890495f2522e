"""Options several commands share, and typer options read from the config dataclasses."""

from __future__ import annotations

from enum import Enum

import typer

from xling.device import DEVICE_HELP, INFERENCE_PRECISION_HELP, PRECISION_HELP
from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.options import options_of
from xling.tagging.decoding import SAVED_DECODER_HELP
from xling.workspace import WORKSPACE_HELP

MODEL = typer.Option(DEFAULT_MODEL, "--model", "-m", help=MODEL_HELP)
WORKSPACE = typer.Option(None, "--workspace", "-w", help=WORKSPACE_HELP)
DEVICE = typer.Option("auto", "--device", help=DEVICE_HELP)
PRECISION = typer.Option("auto", "--precision", help=PRECISION_HELP)
INFERENCE_PRECISION = typer.Option("auto", "--precision", help=INFERENCE_PRECISION_HELP)
DECODER = typer.Option(None, "--decoder", help=SAVED_DECODER_HELP, show_default=False)


def option(config, name: str, *flags: str):
    """The typer option for option `name` of a config instance: default and help come from the dataclass."""
    spec = options_of(config)[name]
    flags = flags or (("--" + name.replace("_", "-"),) if spec.switch else ())
    if spec.required:
        return typer.Option(..., *flags, help=spec.help)
    if spec.unset:
        shown = " (default: the preset's)" if spec.from_preset else ""
        default = ",".join(map(str, spec.default)) if isinstance(spec.default, list) else spec.default
        shown = shown or (f" (default: {default})" if spec.default not in (None, [], {}) else "")
        return typer.Option(None, *flags, help=spec.help + shown, show_default=False)
    return typer.Option(spec.default, *flags, help=spec.help)


def argument(config, name: str):
    return typer.Argument(..., help=options_of(config)[name].help)


class Task(str, Enum):
    ner = "ner"
