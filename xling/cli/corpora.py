"""`xling corpora list`."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from xling.data.catalog import corpora_root, describe, load_catalog

app = typer.Typer(help="The corpora catalogue: corpora by name, local or on the hub.", no_args_is_help=True)


@app.command("list")
def list_corpora():
    """Show the catalogue's corpora, which are available here, and their sizes."""
    root = corpora_root()
    table = Table(title=f"Corpora (local root: {root or 'XLING_CORPORA not set'})")
    for column in ("name", "kind", "here", "size", "hub", "description"):
        table.add_column(column, justify="right" if column == "size" else "left")
    for row in describe(load_catalog()):
        here = ", ".join(row["splits"]) or ("yes" if row["local"] else "[dim]no[/]")
        size = f"{row['bytes'] / 1e6:.1f} MB" if row["local"] else ""
        table.add_row(row["name"], row["kind"], here, size, row["hub"] or "", row["description"])
    Console().print(table)
    if root is None:
        Console().print(
            "Set XLING_CORPORA to a folder laid out as in corpora/catalog.toml (in development: ../shared/corpora)."
        )
