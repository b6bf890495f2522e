"""A recipe's results: one row per evaluation (over seeds: mean, sd, the pooled interval and the paired test against
its baseline), as a markdown table and a JSON file that says how it was made."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rich.table import Table

from xling.adapters.composition import setup_text
from xling.provenance import made_where
from xling.recipes.reading import Recipe
from xling.scoring.bootstrap import interval, paired, spread
from xling.scoring.cells import difference_cell, interval_cell, sentences_cell
from xling.scoring.result import EvaluationResult

METRICS = ("precision", "recall", "f1")


@dataclass
class SeedScores:
    """One seed's scores in a row: precision, recall, F1 and each entity type's F1."""

    seed: int
    precision: float
    recall: float
    f1: float
    f1_by_type: dict[str, float]

    @classmethod
    def of(cls, seed: int, result: EvaluationResult) -> SeedScores:
        by_type = {kind: scores.f1 for kind, scores in result.per_type.items()}
        return cls(seed, result.precision, result.recall, result.f1, by_type)


@dataclass
class ResultRow:
    """One evaluation of a recipe's results (a row of `results.json`): a single run's, or over its seeds the mean of
    each metric, its standard deviation and the per-seed scores; with the sentences it rests on, its 95% interval,
    and the paired test against its baseline row."""

    label: str
    data: str
    setup: str
    adapters: list[str]  # the setup's adapters by name: what a recipe matches a trained adapter's evaluations by
    precision: float
    recall: float
    f1: float
    sentences: int
    seen_in_training: int | None
    computed_in: str | None = None
    per_seed: list[SeedScores] | None = None  # None: one run, `evaluation`
    precision_std: float | None = None  # over seeds: each metric's standard deviation
    recall_std: float | None = None
    f1_std: float | None = None
    f1_by_type: dict[str, float] | None = None  # over seeds: each type's mean F1
    evaluation: EvaluationResult | None = None  # one run: its whole record, which the row's file holds
    f1_interval: list[float] | None = None
    versus: dict | None = None  # the paired test against the baseline row (`scoring.bootstrap.paired`)

    def to_record(self) -> dict:
        """The row as `results.json` holds it: a single run's evaluation record, or the seeds' figures."""
        if self.evaluation is not None:
            written = replace(self.evaluation, sentence_counts=None).to_record()
        else:
            written = {"label": self.label, "data": self.data, "setup": self.setup}
            written |= {"per_seed": [asdict(s) for s in self.per_seed], "computed_in": self.computed_in}
            for metric in METRICS:
                written |= {metric: getattr(self, metric), f"{metric}_std": getattr(self, f"{metric}_std")}
            written["f1_by_type"] = self.f1_by_type
        written |= {"adapters": self.adapters, "sentences": self.sentences, "seen_in_training": self.seen_in_training}
        optional = {"f1_interval": self.f1_interval, "versus": self.versus}
        return written | {key: value for key, value in optional.items() if value is not None}


def combine(runs: dict[int | None, list[EvaluationResult]]) -> list[ResultRow]:
    """One row per evaluation: with several seeds, the mean of each metric, its standard deviation and the
    per-seed values; always how many sentences it rests on, its 95% interval (sentences, and seeds, resampled),
    how many of them the task was trained on, and the paired test against its `baseline` row."""
    rows, counts = [], {}
    for position, first in enumerate(next(iter(runs.values()))):
        results = [seed_results[position] for seed_results in runs.values()]
        row = one_run(first) if list(runs) == [None] else over_seeds([*zip(runs, results)])
        key = first.title or first.label
        if all(r.sentence_counts is not None for r in results):
            counts[key] = [r.sentence_counts for r in results]
            row.f1_interval = list(interval(counts[key]))
        if key in counts and first.baseline in counts:
            row.versus = {"baseline": first.baseline, **paired(counts[key], counts[first.baseline])}
        rows.append(row)
    return rows


def one_run(result: EvaluationResult) -> ResultRow:
    """The row of a recipe without seeds: its one evaluation."""
    scores = {metric: getattr(result, metric) for metric in METRICS}
    return ResultRow(
        result.label, result.data, result.setup, result.named_adapters, **scores, sentences=result.sentences,
        seen_in_training=result.seen_in_training, computed_in=result.computed_in, evaluation=result,
    )  # fmt: skip


def over_seeds(seeded: list[tuple[int, EvaluationResult]]) -> ResultRow:
    """A row's figures over its seeds' evaluations: each metric's mean and standard deviation, each type's mean F1;
    the sentences those of the first, and the most of them any seed's task was trained on."""
    per_seed = [SeedScores.of(seed, result) for seed, result in seeded]
    first, seen = seeded[0][1], [result.seen_in_training for _, result in seeded]
    means, spreads, by_type = seed_figures(per_seed)
    return ResultRow(
        first.label, first.data, first.setup, first.named_adapters, **means, sentences=first.sentences,
        seen_in_training=None if None in seen else max(seen), computed_in=first.computed_in, per_seed=per_seed,
        **spreads, f1_by_type=by_type,
    )  # fmt: skip


def seed_figures(per_seed: list[SeedScores]) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Over the seeds: each metric's mean, its standard deviation (`f1_std`, ...), and each entity type's mean F1."""
    means, spreads = {}, {}
    for metric in METRICS:
        means[metric], spreads[f"{metric}_std"] = spread([getattr(s, metric) for s in per_seed])
    kinds = sorted({kind for s in per_seed for kind in s.f1_by_type})
    return means, spreads, {kind: spread([s.f1_by_type.get(kind, 0.0) for s in per_seed])[0] for kind in kinds}


def results_table(rows: list[ResultRow]) -> str:
    """Markdown; with seeds, F1 per seed and mean ± standard deviation (precision and recall as means); the 95%
    interval, the sentences scored, and the paired test against a baseline row where the recipe names one."""
    seeds = [run.seed for run in rows[0].per_seed or []]
    columns = ["evaluation", "data", "setup", *(f"F1 seed {s}" for s in seeds), "precision", "recall", "F1"]
    columns += ["95% interval", "sentences", "against baseline"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        cells = [r.label, Path(r.data).parent.name + "/" + Path(r.data).name, f"`{setup_text(r.setup)}`"]
        cells += [f"{100 * run.f1:.1f}" for run in r.per_seed or []]
        cells += [
            f"{100 * r.precision:.1f}",
            f"{100 * r.recall:.1f}",
            _f1(r),
            interval_cell(r.f1_interval),
            sentences_cell(r.sentences, r.seen_in_training),
        ]
        cells.append(_versus(r))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def rich_results(recipe: Recipe, rows: list[ResultRow]) -> Table:
    """The results as the terminal shows them after a run."""
    seeds = f" (seeds {', '.join(map(str, recipe.seeds))})" if recipe.seeds else ""
    table = Table(title=f"Results of {recipe.name}{seeds}")
    for column in ("evaluation", "setup", "P", "R", "F1", "95% interval", "n", "against baseline"):
        table.add_column(column, justify="right" if len(column) <= 2 else "left")
    for r in rows:
        table.add_row(
            r.label,
            setup_text(r.setup),
            f"{100 * r.precision:.1f}",
            f"{100 * r.recall:.1f}",
            _f1(r),
            interval_cell(r.f1_interval),
            sentences_cell(r.sentences, r.seen_in_training),
            _versus(r),
        )
    return table


def _f1(row: ResultRow) -> str:
    return f"{100 * row.f1:.1f} ± {100 * row.f1_std:.1f}" if row.per_seed else f"{100 * row.f1:.1f}"


def _versus(row: ResultRow) -> str:
    return f"{difference_cell(row.versus)} vs {row.versus['baseline']}" if row.versus else ""


def provenance(recipe: Recipe) -> dict:
    """What a results file says of how it was made (the docs' tables name it)."""
    return {"recipe": recipe.name, "seeds": recipe.seeds, "model": recipe.model, **made_where()}
