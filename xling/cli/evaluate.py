"""`xling evaluate`: score a trained task on labelled data (a thin command over `xling.tagging.evaluate`)."""

from __future__ import annotations

import json

import typer
from rich.console import Console

from xling.cli.options import DECODER, MODEL, WORKSPACE, Task, comma_list
from xling.data.labels import parse_label_map
from xling.scoring import scores_table
from xling.tagging.evaluate import EvaluationOptions, evaluate

console = Console(stderr=True)
EVALUATION = EvaluationOptions(data="", lang="qu")  # the defaults of `evaluate`


def evaluate_command(
    task: Task = typer.Argument(..., help="The task: ner."),
    data: str = typer.Argument(..., help="Labelled data: a CoNLL file or a named source such as wikiann:qu."),
    lang: str = typer.Option(
        ..., "--lang", help="Language of the data: its language adapter is stacked under the task adapter."
    ),
    task_adapter: str = typer.Option(
        None,
        "--task-adapter",
        "-t",
        help="Trained task (name or directory) (default: ner-LANG if trained, else ner-en).",
    ),
    fusion: str = typer.Option(None, help="A trained fusion to evaluate instead of a single task adapter."),
    no_lang_adapter: bool = typer.Option(
        False, "--no-lang-adapter", help="Evaluate the task adapter without any language adapter."
    ),
    model: str = MODEL,
    workspace: str = WORKSPACE,
    drop_labels: str = typer.Option(None, help="Entity types to turn into O in the gold data, e.g. MISC."),
    label_map: str = typer.Option(None, help="Rename entity types in the gold data, e.g. PERSON=PER."),
    limit: int = typer.Option(None, help="Score the first N sentences only."),
    batch_size: int = typer.Option(EVALUATION.batch_size),
    decoder: str = DECODER,
    as_json: bool = typer.Option(False, "--json", help="Print the scores as JSON."),
):
    """Score a trained task on labelled data with seqeval (strict IOB2, entity level)."""
    result = evaluate(
        EvaluationOptions(
            data=data,
            lang=lang,
            task_adapter=task_adapter,
            fusion=fusion,
            model=model,
            workspace=workspace,
            use_lang_adapter=not no_lang_adapter,
            limit=limit,
            drop_labels=comma_list(drop_labels),
            label_map=parse_label_map(label_map),
            batch_size=batch_size,
            decoder=decoder,
        )
    )
    if result["types_not_predicted"]:
        missing = ",".join(result["types_not_predicted"])
        console.print(
            f"[yellow]note:[/] the data has entity types that {result['task_adapter']} never predicts ({missing}); they "
            f"count as missed. --drop-labels {missing} leaves them out, --label-map renames them."
        )
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        Console().print(
            scores_table(result, f"{task.value} on {data}: {result['setup']} ({result['sentences']:,} sentences)")
        )
