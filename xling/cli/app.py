"""Root of the command tree; each command group lives in its own module."""

from __future__ import annotations

import os
import sys
import traceback

import typer
from rich.console import Console

from xling import __version__
from xling.cli import analyze as analyze_cli
from xling.cli import corpora as corpora_cli
from xling.cli import evaluate as evaluate_cli
from xling.cli import models as models_cli
from xling.cli import run as run_cli
from xling.cli import share as share_cli
from xling.cli import tag as tag_cli
from xling.cli import train as train_cli
from xling.device import check_launcher, end_processes, process_rank
from xling.errors import XlingError

app = typer.Typer(
    name="xling",
    help="Named-entity recognition for low-resource languages with MAD-X adapters.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(models_cli.app, name="models")
app.command("train-lang")(train_cli.train_lang)
app.command("train-task")(train_cli.train_task)
app.command("train-fusion")(train_cli.train_fusion_command)
app.command("self-train")(train_cli.self_train_command)
app.command("evaluate")(evaluate_cli.evaluate_command)
app.command("tag")(tag_cli.tag)
app.add_typer(analyze_cli.app, name="analyze")
app.add_typer(corpora_cli.app, name="corpora")
app.command("push")(share_cli.push_command)
app.command("export")(share_cli.export_command)
app.command("run")(run_cli.run)
app.command("demo")(run_cli.demo)


def _version(value: bool):
    if value:
        print(f"xling {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
):
    pass


def _quiet_transformers() -> None:
    """The command line shows its own progress; Transformers' load reports and bars are noise here."""
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()


def _silence_other_processes() -> None:
    """Under torchrun / accelerate launch every process runs the command; the first one speaks for all."""
    if process_rank() > 0:
        sys.stdout = sys.stderr = open(os.devnull, "w")


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 1."""
    _quiet_transformers()
    _silence_other_processes()
    try:
        check_launcher()
        app()
    except XlingError as err:
        Console(stderr=True).print(f"[bold red]error:[/] {err}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except Exception:
        if process_rank() > 0:  # its own failure, not one the first process reports
            traceback.print_exc(file=sys.__stderr__)
        raise
    finally:
        end_processes()
