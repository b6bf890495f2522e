"""`xling analyze fusion|ablation|confidence|errors|params`: one subcommand per registered `Analysis`
(`xling.analysis.options.ANALYSES`), thin over `xling.analysis.reports`, their options from `AnalyzeOptions`."""

from __future__ import annotations

import json

import typer
from rich.console import Console

from xling.analysis.options import ANALYSES, Analysis, AnalyzeOptions
from xling.cli.options import command
from xling.records import set_fields

app = typer.Typer(
    help="Analyses: fusion attention, layer ablations, confidence, errors, parameter budgets.", no_args_is_help=True
)
console = Console(stderr=True)


def subcommand(analysis: Analysis) -> None:
    """The subcommand `analysis.name` of `xling analyze`: the options of `AnalyzeOptions` that it shows, its
    analysis fixed; it prints its summary, or with --json its numbers."""

    def run(options: AnalyzeOptions, as_json: bool = typer.Option(False, "--json", help="Print the numbers as JSON.")):
        from xling.analysis.reports import run_analysis, summary  # torch loads here, not for --help

        result = run_analysis(options, console)
        if options.output_file():
            console.print(f"[green]wrote[/] {options.output_file()} and {result.json}")
        if as_json:
            print(json.dumps(set_fields(result), indent=2))
        elif (shown := summary(options, result)) is not None:
            Console().print(shown)

    run.__doc__ = analysis.help
    app.command(analysis.name)(command(AnalyzeOptions, analysis.shown, analysis=analysis.name)(run))


for registered in ANALYSES.values():
    subcommand(registered)
