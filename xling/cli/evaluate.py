"""`xling evaluate`: score a trained task on labelled data (a thin command over `xling.tagging.evaluate`)."""

from __future__ import annotations

from dataclasses import replace

import typer
from rich.console import Console

from xling.cli.options import command
from xling.fileio import json_text
from xling.tagging.evaluate import EvaluationOptions, evaluate, leakage_warning
from xling.tagging.options import CompareOptions

console = Console(stderr=True)


@command(EvaluationOptions)
def evaluate_command(
    options: EvaluationOptions,
    as_json: bool = typer.Option(
        False, "--json", help="Print the scores as JSON (with --bootstrap, each sentence's counts, for xling compare)."
    ),
):
    """Score a trained task on labelled data with seqeval (strict IOB2, entity level)."""
    from xling.scoring import scores_table  # seqeval loads slowly: not for --help

    result = evaluate(options)
    if result.types_not_predicted:
        missing = ",".join(result.types_not_predicted)
        console.print(
            f"[yellow]note:[/] the data has entity types that {result.task_adapter} never predicts ({missing}); they "
            f"count as missed. --drop-labels {missing} leaves them out, --label-map renames them."
        )
    if warning := leakage_warning(result):
        console.print(warning, highlight=False)
    if not options.bootstrap:
        result = replace(result, sentence_counts=None)  # thousands of lines; --bootstrap keeps them for compare
    if as_json:
        print(json_text(result.to_record(), indent=2))
    else:
        title = f"{options.tagger.task} on {options.data}: {result.setup} ({result.sentences:,} sentences)"
        Console().print(scores_table(result, title))


@command(CompareOptions)
def compare_command(
    options: CompareOptions, as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON.")
):
    """Is A better than B? The F1 difference on the same sentences, its 95% interval and a paired-bootstrap
    p-value."""
    from xling.scoring.cells import p_cell
    from xling.scoring.compare import compare

    a, b, samples = options.a, options.b, options.samples
    result = compare(a, b, samples)
    if as_json:
        print(json_text(result, indent=2))
        return
    Console().print(
        f"F1 {100 * result['f1_a']:.1f} ({a}) against {100 * result['f1_b']:.1f} ({b}) on {result['sentences']:,} "
        f"sentences: difference {100 * result['difference']:+.1f}, 95% interval [{100 * result['low']:+.1f}, "
        f"{100 * result['high']:+.1f}], {p_cell(result['p'], samples)} (paired bootstrap, {samples:,} samples)",
        highlight=False,
    )
