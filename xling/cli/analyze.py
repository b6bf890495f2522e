"""`xling analyze fusion|ablation|confidence|params`: thin commands over `xling.analysis.reports`, their options
from `AnalyzeOptions`."""

from __future__ import annotations

import json

import typer
from rich.console import Console

from xling.analysis.options import AnalyzeOptions
from xling.cli.options import MODEL, WORKSPACE, argument, option
from xling.options import build, defaults

app = typer.Typer(
    help="Analyses: fusion attention, layer ablations, confidence, parameter budgets.", no_args_is_help=True
)
console = Console(stderr=True)
ANALYZE = defaults(AnalyzeOptions)


def run(analysis: str, values: dict) -> dict:
    from xling.analysis.reports import run_analysis  # torch loads here, not for --help

    options = build(AnalyzeOptions, {**values, "analysis": analysis})
    result = run_analysis(options, console)
    if options.output_file():
        console.print(f"[green]wrote[/] {options.output_file()} and {result['json']}")
    return result


@app.command("fusion")
def fusion(
    data: str = argument(ANALYZE, "data"),
    fusion: str = option(ANALYZE, "fusion", "--fusion"),
    lang: str = option(ANALYZE, "lang", "--lang"),
    output: str = option(ANALYZE, "output", "--output", "-o"),
    model: str = MODEL,
    workspace: str = WORKSPACE,
):
    """Average fusion attention per layer and adapter, as a heatmap (AdapterFusion, Figure 4)."""
    run("fusion", locals())


@app.command("ablation")
def ablation(
    data: str = argument(ANALYZE, "data"),
    lang: str = option(ANALYZE, "lang", "--lang"),
    task_adapter: str = option(ANALYZE, "task_adapter", "--task-adapter", "-t"),
    fusion: str = option(ANALYZE, "fusion", "--fusion"),
    limit: int = option(ANALYZE, "limit", "--limit"),
    output: str = option(ANALYZE, "output", "--output", "-o"),
    model: str = MODEL,
    workspace: str = WORKSPACE,
):
    """Relative F1 drop when the adapters of layers i..j are removed (Houlsby et al., Figure 6)."""
    result = run("ablation", locals())
    console.print(f"F1 with all adapters {100 * result['f1']:.1f}")


@app.command("confidence")
def confidence(
    data: str = argument(ANALYZE, "data"),
    lang: str = option(ANALYZE, "lang", "--lang"),
    task_adapter: str = option(ANALYZE, "task_adapter", "--task-adapter", "-t"),
    decoder: str = option(ANALYZE, "decoder", "--decoder"),
    limit: int = option(ANALYZE, "limit", "--limit"),
    output: str = option(ANALYZE, "output", "--output", "-o"),
    model: str = MODEL,
    workspace: str = WORKSPACE,
):
    """How often tagged entities are right, and words tagged O are inside an entity, by their probability: which
    self-train --threshold keeps pseudo-labels right."""
    from xling.analysis.reports import confidence_table

    Console().print(confidence_table(run("confidence", locals())))


@app.command("params")
def params(model: str = MODEL, workspace: str = WORKSPACE, as_json: bool = typer.Option(False, "--json")):
    """Parameters each adapter and task adds, as a share of the base model."""
    from xling.analysis.reports import params_table

    result = run("params", {"model": model, "workspace": workspace})
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        Console().print(params_table(result, model))
