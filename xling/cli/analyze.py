"""`xling analyze fusion|ablation|confidence|params`: thin commands over `xling.analysis.reports`."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from xling.cli.options import DECODER, MODEL, WORKSPACE

app = typer.Typer(
    help="Analyses: fusion attention, layer ablations, confidence, parameter budgets.", no_args_is_help=True
)
console = Console(stderr=True)


@app.command("fusion")
def fusion(
    data: str = typer.Argument(..., help="Data to run the fusion over (a CoNLL file or named source)."),
    fusion_name: str = typer.Option(..., "--fusion", help="The trained fusion."),
    lang: str = typer.Option(..., "--lang", help="Language of the data (its adapter goes below the fusion)."),
    output: Path = typer.Option(
        Path("fusion-attention.png"), "--output", "-o", help="PNG to write; the numbers go beside it as JSON."
    ),
    model: str = MODEL,
    workspace: str = WORKSPACE,
):
    """Average fusion attention per layer and adapter, as a heatmap (AdapterFusion, Figure 4)."""
    from xling.analysis import reports

    result = reports.fusion_report(data, fusion_name, lang, output, model, workspace)
    console.print(f"[green]wrote[/] {output} and {result['json']} ({result['tokens']:,} tokens)")


@app.command("ablation")
def ablation(
    data: str = typer.Argument(..., help="Labelled evaluation data."),
    lang: str = typer.Option(..., "--lang", help="Language of the data."),
    task_adapter: str = typer.Option(None, "--task-adapter", "-t", help="Task adapter (default: as for tagging)."),
    fusion_name: str = typer.Option(None, "--fusion", help="Ablate a fusion setup instead."),
    limit: int = typer.Option(None, help="Use only the first N sentences (the ablation evaluates n(n+1)/2 times)."),
    output: Path = typer.Option(
        Path("layer-ablation.png"), "--output", "-o", help="PNG to write; the numbers go beside it as JSON."
    ),
    model: str = MODEL,
    workspace: str = WORKSPACE,
):
    """Relative F1 drop when the adapters of layers i..j are removed (Houlsby et al., Figure 6)."""
    from xling.analysis import reports

    result = reports.ablation_report(data, lang, task_adapter, fusion_name, limit, output, model, workspace, console)
    console.print(f"[green]wrote[/] {output} and {result['json']} (F1 with all adapters {100 * result['f1']:.1f})")


@app.command("confidence")
def confidence(
    data: str = typer.Argument(..., help="Labelled data of the language (a CoNLL file or named source)."),
    lang: str = typer.Option(..., "--lang", help="Language of the data."),
    task_adapter: str = typer.Option(None, "--task-adapter", "-t", help="Task adapter (default: as for tagging)."),
    decoder: str | None = DECODER,
    limit: int = typer.Option(None, help="Use only the first N sentences."),
    output: Path = typer.Option(
        Path("confidence.png"), "--output", "-o", help="PNG to write; the numbers go beside it as JSON."
    ),
    model: str = MODEL,
    workspace: str = WORKSPACE,
):
    """How often tagged entities are right, and words tagged O are inside an entity, by their probability: which
    self-train --threshold keeps pseudo-labels right."""
    from xling.analysis import reports

    result = reports.confidence_report(data, lang, task_adapter, decoder, limit, output, model, workspace)
    Console().print(reports.confidence_table(result))
    console.print(f"[green]wrote[/] {output} and {result['json']}")


@app.command("params")
def params(model: str = MODEL, workspace: str = WORKSPACE, as_json: bool = typer.Option(False, "--json")):
    """Parameters each adapter and task adds, as a share of the base model."""
    from xling.analysis import reports

    result = reports.params_report(model, workspace)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        Console().print(reports.params_table(result, model))
