"""`xling analyze fusion|ablation|confidence|errors|params`: thin commands over `xling.analysis.reports`, their options
from `AnalyzeOptions`."""

from __future__ import annotations

import json

import typer
from rich.console import Console

from xling.analysis.options import AnalyzeOptions
from xling.cli.options import command

app = typer.Typer(
    help="Analyses: fusion attention, layer ablations, confidence, errors, parameter budgets.", no_args_is_help=True
)
console = Console(stderr=True)
# what every analysis that tags takes besides its own options
SETUP = ("lang_adapter", "no_lang_adapter", "batch_size", "device", "precision", "output", "model", "workspace")


def analysis(name: str, shown: tuple[str, ...]):
    """The subcommand NAME of `xling analyze`: the options of `AnalyzeOptions` that it shows, its analysis fixed."""
    return lambda run: app.command(name)(command(AnalyzeOptions, shown, analysis=name)(run))


def run(options: AnalyzeOptions) -> dict:
    from xling.analysis.reports import run_analysis  # torch loads here, not for --help

    result = run_analysis(options, console)
    if options.output_file():
        console.print(f"[green]wrote[/] {options.output_file()} and {result['json']}")
    return result


@analysis("fusion", ("data", "fusion", "lang", *SETUP))
def fusion(options: AnalyzeOptions):
    """Average fusion attention per layer and adapter, as a heatmap (AdapterFusion, Figure 4)."""
    run(options)


@analysis("ablation", ("data", "lang", "task_adapter", "fusion", "limit", *SETUP))
def ablation(options: AnalyzeOptions):
    """Relative F1 drop when the adapters of layers i..j are removed (Houlsby et al., Figure 6)."""
    result = run(options)
    console.print(f"F1 with all adapters {100 * result['f1']:.1f}")


@analysis("confidence", ("data", "lang", "task_adapter", "decoder", "limit", *SETUP))
def confidence(options: AnalyzeOptions):
    """How often tagged entities are right, and words tagged O are inside an entity, by their probability: which
    self-train --threshold keeps pseudo-labels right."""
    from xling.analysis.reports import confidence_table

    Console().print(confidence_table(run(options)))


@analysis("errors", ("data", "lang", "task_adapter", "decoder", "limit", *SETUP))
def errors(options: AnalyzeOptions):
    """Which entities are right, of the wrong type or span, spurious or missed, the confusion of types as a
    heatmap, and the words wrong spans leave out or take in (a target language's span conventions show there)."""
    from xling.analysis.reports import errors_table

    Console().print(errors_table(run(options)))


@analysis("params", ("model", "workspace"))
def params(options: AnalyzeOptions, as_json: bool = typer.Option(False, "--json", help="Print the budgets as JSON.")):
    """Parameters each adapter and task adds, as a share of the base model."""
    from xling.analysis.reports import params_table

    result = run(options)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        Console().print(params_table(result, options.tagger.model))
