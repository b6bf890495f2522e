"""`xling corpora list` and `xling corpora get`."""

from __future__ import annotations

import json
from dataclasses import asdict

import typer
from rich.console import Console
from rich.table import Table

from xling.cli.options import command
from xling.data.catalog import CorpusOptions, corpora_root, corpus_cache, describe, load_catalog
from xling.data.overlap import OverlapOptions
from xling.errors import XlingError

app = typer.Typer(
    help="The corpora catalogue: corpora by name, where each is here, and its public source.", no_args_is_help=True
)


@app.command("list")
def list_corpora(as_json: bool = typer.Option(False, "--json", help="Print the catalogue as JSON.")):
    """Show the catalogue's corpora: which are here (local root or cache), their sizes and public sources."""
    rows = describe(load_catalog())
    if as_json:
        print(json.dumps([asdict(row) for row in rows], indent=2, ensure_ascii=False))
        return
    root = corpora_root()
    table = Table(title=f"Corpora (local root: {root or 'XLING_CORPORA not set'}; cache: {corpus_cache()})")
    for column in ("name", "kind", "here", "size", "source", "licence"):
        table.add_column(column, justify="right" if column == "size" else "left")
    for row in rows:
        here = ", ".join(row.here) or ("yes" if row.local else "[dim]no[/]")
        size = f"{row.bytes / 1e6:.1f} MB" if row.local else ""
        table.add_row(row.name, row.kind, here, size, row.source or "[dim]none[/]", row.licence or "")
    Console().print(table)
    Console().print("`xling corpora get NAME` fetches a corpus into the cache (its first use does the same).")


@app.command("get")
@command(CorpusOptions)
def get_corpus(options: CorpusOptions):
    """Fetch a corpus from its public source into xling's corpus cache (pinned revision, sha256 recorded)."""
    from xling.data.fetch import fetch_all

    catalog, name = load_catalog(), options.name
    if name not in catalog:
        raise XlingError(f"unknown corpus {name!r}; known: {', '.join(sorted(catalog))}")
    console = Console(stderr=True)
    for path in fetch_all(catalog[name], console):
        console.print(f"[green]ready[/] {path}", highlight=False)


@app.command("overlap")
@command(OverlapOptions)
def overlap_command(
    options: OverlapOptions, as_json: bool = typer.Option(False, "--json", help="Print the overlap as JSON.")
):
    """How many sentences (and their entities) two data sets share verbatim: leakage between training and
    evaluation data shows here."""
    from xling.data.overlap import overlap  # reads data sets: loaded when run

    a, b = options.a, options.b
    result = overlap(a, b)
    if as_json:
        print(json.dumps(asdict(result), indent=2, ensure_ascii=False))
        return
    table = Table(title=f"Overlap: {result.shared_sentences:,} distinct sentences in both")
    for column in ("data set", "sentences", "distinct", "entities", "sentences in the other", "their entities"):
        table.add_column(column, justify="left" if column == "data set" else "right", overflow="fold")
    for side in (result.a, result.b):
        numbers = (side.sentences, side.distinct, side.entities, side.sentences_in_other, side.entities_in_other)
        table.add_row(side.data, *(f"{number:,}" for number in numbers))
    Console().print(table)
    same = result.a.same_tags
    if same is not None:
        Console().print(
            f"{same:,} of the shared sentences of {a} carry the same tags in {b}; "
            f"{result.shared_entity_mentions:,} entity mentions (type and words) are in both.",
            highlight=False,
        )
