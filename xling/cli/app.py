"""Root of the command tree; each command or command group lives in its own module.

A command's module is imported only when that command runs, shows its own help, or completes its options;
`xling --help`, `xling --version` and completing a command name read the commands' one-line summaries from
their source instead. The command modules import no model library at the top (torch, Transformers and seqeval
load when a command runs), so every `--help` answers at once.
"""

from __future__ import annotations

import ast
import errno
import gc
import importlib
import importlib.util
import os
import re
import sys
import traceback
from pathlib import Path

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

from xling import __version__
from xling.errors import XlingError, is_network_error, is_out_of_memory
from xling.fileio import MAX_NAME_BYTES

DEBUG = "XLING_DEBUG"
INTERRUPTED = "interrupted; rerun the same command to resume"

# name: (module, attribute); an attribute that is a Typer app is a group of commands.
COMMANDS = {
    "models": ("xling.cli.models", "app"),
    "train-lang": ("xling.cli.train", "train_lang"),
    "train-encoder": ("xling.cli.train", "train_encoder_command"),
    "train-task": ("xling.cli.train", "train_task"),
    "train-fusion": ("xling.cli.train", "train_fusion_command"),
    "self-train": ("xling.cli.train", "self_train_command"),
    "soup": ("xling.cli.train", "soup_command"),
    "evaluate": ("xling.cli.evaluate", "evaluate_command"),
    "compare": ("xling.cli.evaluate", "compare_command"),
    "tag": ("xling.cli.tag", "tag"),
    "serve": ("xling.cli.tag", "serve_command"),
    "select": ("xling.cli.annotate", "select_command"),
    "annotate": ("xling.cli.annotate", "annotate_command"),
    "project": ("xling.cli.annotate", "project_command"),
    "translate": ("xling.cli.annotate", "translate_command"),
    "match": ("xling.cli.annotate", "match_command"),
    "push": ("xling.cli.share", "push_command"),
    "export": ("xling.cli.share", "export_command"),
    "analyze": ("xling.cli.analyze", "app"),
    "corpora": ("xling.cli.corpora", "app"),
    "run": ("xling.cli.run", "run"),
    "demo": ("xling.cli.run", "demo"),
}


def summary(module: str, attribute: str) -> str:
    """A command's help as typer shows it (the function's docstring, a group's `help=`), read without importing."""
    tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attribute:
            return ast.get_docstring(node) or ""
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == attribute for t in node.targets):
            return next((ast.literal_eval(k.value) for k in getattr(node.value, "keywords", []) if k.arg == "help"), "")
    return ""


class LazyCommands(TyperGroup):
    """Commands by name, each built from its module only when it is needed."""

    listing = False  # while the root's help or a command-name completion lists the commands

    def list_commands(self, ctx) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx, name: str):
        if name not in COMMANDS:
            return None
        if self.listing:
            return TyperCommand(name, help=summary(*COMMANDS[name]))
        module, attribute = COMMANDS[name]
        target = getattr(importlib.import_module(module), attribute)
        if isinstance(target, typer.Typer):
            command = typer.main.get_group(target)
        else:
            single = typer.Typer(pretty_exceptions_enable=False, add_completion=False)  # the root has them
            single.command(name)(target)
            command = typer.main.get_command(single)
        command.name = name
        return command

    def format_help(self, ctx, formatter) -> None:
        self._listing(super().format_help, ctx, formatter)

    def shell_complete(self, ctx, incomplete: str):
        return self._listing(super().shell_complete, ctx, incomplete)

    def _listing(self, method, *args):
        self.listing = True
        try:
            return method(*args)
        finally:
            self.listing = False


app = typer.Typer(
    name="xling",
    cls=LazyCommands,
    help="Named-entity recognition for low-resource languages with MAD-X adapters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool):
    if value:
        print(f"xling {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help=f"Show the traceback of an unexpected error (or set {DEBUG}=1)."),
):
    if debug:
        os.environ[DEBUG] = "1"


def process_rank() -> int:
    """This process's rank under `torchrun` or `accelerate launch`; 0 when it runs alone."""
    return int(os.environ.get("RANK", "0"))


def check_launcher() -> None:
    """`accelerate launch --cpu --num_processes N` sets MASTER_ADDR but starts one process (MPI aside): say so."""
    env = os.environ
    if env.get("ACCELERATE_USE_CPU") == "True" and "MASTER_ADDR" in env and "WORLD_SIZE" not in env:
        raise XlingError(
            "`accelerate launch --cpu` starts a single process; for several CPU processes run "
            "`accelerate launch --multi_gpu --num_processes N -m xling ...` (gloo on CPU when no GPU is "
            "present) or `torchrun --nproc_per_node N -m xling ...`"
        )


def end_processes() -> None:
    """Close a distributed run's process group before exit: left to interpreter teardown, gloo's threads
    can abort the process ("terminate called without an active exception") after its work is done."""
    if "torch" not in sys.modules:  # no torch, no process group (and no need to import it now)
        return
    import torch

    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def _silence_other_processes() -> None:
    """Under torchrun / accelerate launch every process runs the command; the first one speaks for all."""
    if process_rank() > 0:
        sys.stdout = sys.stderr = open(os.devnull, "w")


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 1."""
    # The command line shows its own progress; Transformers' load reports and bars are noise here. Set in the
    # environment (a user's own setting wins) so that nothing is imported for it.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    _silence_other_processes()
    try:
        check_launcher()
        app()
    except XlingError as err:
        _fail(str(err))
    except KeyboardInterrupt:
        _fail(INTERRUPTED, code=130)
    except SystemExit as done:
        if done.code in (130, 143):  # Ctrl+C as typer says it (nothing), or SIGTERM as training leaves on it
            _fail(INTERRUPTED, code=done.code)
        raise
    except BaseException as err:  # an Exception, or pyo3's PanicException (a Rust library's panic), which is not one
        if not isinstance(err, Exception) and type(err).__name__ != "PanicException":
            raise
        if process_rank() > 0:  # its own failure, not one the first process reports
            traceback.print_exc(file=sys.__stderr__)
        if os.environ.get(DEBUG) == "1":
            raise
        _fail(system_error(err) or f"{unexpected(err)} ({_keep_traceback()})")
    finally:
        end_processes()
        # The interpreter's last collection would walk torch's million objects (a third of a second): they
        # are left to the exit, which frees them all at once
        gc.freeze()


MAX_ERROR = 1_000  # characters of the error line: what a damaged file puts in it stays one readable line


def one_line(message: str) -> str:
    """`message` as one line a terminal shows as it is: control characters and direction overrides (U+202E)
    escaped, cut to MAX_ERROR characters."""
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    if len(escaped) <= MAX_ERROR:
        return escaped
    cut = escaped[: MAX_ERROR - 4]
    word = cut.rpartition(" ")[0]  # at a word where one ends near the bound, else where the bound falls
    return f"{word if len(word) > len(cut) - 80 else cut} ..."


def _fail(message: str, code: int = 1) -> None:
    line = Text.assemble(("error:", "bold red"), " ", one_line(message))
    Console(stderr=True).print(line, highlight=False, soft_wrap=True)
    sys.exit(code)


def system_error(err: BaseException) -> str | None:
    """One line for a failure of the machine rather than of xling (full disk, read-only or missing folder, no
    network), saying what to do; None for anything else."""
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    where = f" {err.filename}" if isinstance(err, OSError) and err.filename else ""
    number = err.errno if isinstance(err, OSError) else None
    if is_out_of_memory(err):
        return out_of_memory(text)
    if number == errno.ENAMETOOLONG:
        return (
            f"{where.strip() or 'a path'}: a file or folder name is too long (at most {MAX_NAME_BYTES} bytes); "
            "give a shorter one"
        )
    if number == errno.ENOSPC or "No space left on device" in text:
        return f"the disk is full (writing{where or ' a file'}); free some space and rerun: nothing saved was changed"
    if number == errno.EROFS:
        return f"cannot write{where}: the file system is read-only; give a writable workspace with -w"
    if number in (errno.EACCES, errno.EPERM):
        return f"cannot write{where}: permission denied"
    if number in (errno.ENOTDIR, errno.EISDIR, errno.ENOENT):
        return f"{where.strip() or 'a path'}: {os.strerror(number).lower()}"
    if is_network_error(err):
        return f"cannot reach the network ({text}); check the connection, or work offline with local files"
    if isinstance(err, ModuleNotFoundError) and err.name in TRAINING_STACK:
        return (
            f"this command needs {err.name}, which this install lacks (xling-onnx tags exported ONNX folders only, "
            "with --runtime onnx); for every command, in another virtual environment: pip install -e . in xling's clone"
        )
    return None


# what a deploy install (docs/sharing.md: `xling-onnx`, deploy/pyproject.toml) leaves out
TRAINING_STACK = ("torch", "transformers", "datasets", "accelerate", "safetensors", "seqeval", "sentencepiece")


REQUESTED = re.compile(r"allocate ([0-9.]+) ?(bytes|[KMGT]i?B)\b")


def out_of_memory(text: str) -> str:
    """One line for memory exhausted, with the amount asked for where the message has it."""
    asked = REQUESTED.search(text)
    figure = ""
    if asked and asked[2] == "bytes":
        figure = f" ({float(asked[1]) / 2**30:,.1f} GiB asked for at once)"
    elif asked:
        figure = f" ({asked[1]} {asked[2]} asked for at once)"
    return (
        f"out of memory{figure}; lower --batch-size or --max-len, give shorter input, or use a machine with more memory"
    )


def unexpected(err: BaseException) -> str:
    return f"unexpected {type(err).__name__}: {(str(err).splitlines() or [''])[0][:300]}"


def _keep_traceback() -> str:
    """Write the traceback being handled to a file for a report; say where (or how to see it)."""
    from datetime import datetime

    from xling.paths import error_log_dir

    try:
        folder = error_log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / f"{datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}.log"
        log.write_text(f"xling {__version__}: {' '.join(sys.argv)}\n{traceback.format_exc()}", encoding="utf-8")
        return f"traceback in {log}; rerun with --debug to see it"
    except OSError:
        return "rerun with --debug to see the traceback"
