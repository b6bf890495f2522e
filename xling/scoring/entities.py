"""Entity-level precision, recall and F1 with seqeval in strict IOB2 mode."""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table
from seqeval.metrics import classification_report
from seqeval.scheme import IOB2

from xling.data.schemes import UNJUDGED
from xling.errors import XlingError
from xling.scoring.result import EvaluationResult, TypeScores


@dataclass
class EntityScores:
    """Entity scores, fractions in [0, 1]: the fields an `EvaluationResult` starts from."""

    precision: float
    recall: float
    f1: float
    support: int  # gold entities
    sentences: int
    per_type: dict[str, TypeScores]
    # seqeval's own `classification_report(output_dict=True)`, its keys (`f1-score`) and its micro, macro and
    # weighted averages, for the dashboards that read that shape
    seqeval_report: dict[str, dict[str, float]]


def score(gold: list[list[str]], predicted: list[list[str]]) -> EntityScores:
    """Strict IOB2 entity scores of `predicted` against `gold`."""
    if len(gold) != len(predicted) or any(len(g) != len(p) for g, p in zip(gold, predicted)):
        raise ValueError("gold and predicted tag sequences differ in shape")
    if any(UNJUDGED in tags for tags in gold):
        raise XlingError(f"the gold data has words not judged ({UNJUDGED!r} tags): score on fully labelled data")
    report = classification_report(gold, predicted, mode="strict", scheme=IOB2, output_dict=True, zero_division=0)
    per_type = {
        label: TypeScores(float(v["precision"]), float(v["recall"]), float(v["f1-score"]), int(v["support"]))
        for label, v in report.items()
        if not label.endswith(" avg")
    }
    micro = report.get("micro avg", {"precision": 0.0, "recall": 0.0, "f1-score": 0.0, "support": 0})
    return EntityScores(
        precision=float(micro["precision"]),  # seqeval's numpy floats: plain ones, as JSON writes them
        recall=float(micro["recall"]),
        f1=float(micro["f1-score"]),
        support=int(micro["support"]),
        sentences=len(gold),
        per_type=per_type,
        seqeval_report={
            label: {key: int(value) if key == "support" else float(value) for key, value in values.items()}
            for label, values in report.items()
        },
    )


def scores_table(result: EvaluationResult, title: str) -> Table:
    table = Table(title=title)
    for column in ("entity type", "precision", "recall", "F1", "support"):
        table.add_column(column, justify="left" if column == "entity type" else "right")
    for label, scores in sorted(result.per_type.items()):
        figures = (scores.precision, scores.recall, scores.f1)
        table.add_row(label, *(f"{100 * value:.1f}" for value in figures), str(scores.support))
    overall = (result.precision, result.recall, result.f1)
    table.add_row(
        "[bold]overall[/]", *(f"[bold]{100 * v:.1f}[/]" for v in overall), str(result.support), end_section=True
    )
    if result.f1_interval is not None:
        low, high = (100 * bound for bound in result.f1_interval)
        table.caption = (
            f"F1 95% interval [{low:.1f}, {high:.1f}]: {result.bootstrap_samples:,} resamplings of the "
            f"{result.sentences:,} sentences"
        )
    return table
