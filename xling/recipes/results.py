"""A recipe's results: one row per evaluation (over seeds: mean, sd, the pooled interval and the paired test against
its baseline), as a markdown table and a JSON file that says how it was made."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.table import Table

from xling.adapters.composition import setup_text
from xling.provenance import made_where
from xling.recipes.reading import Recipe
from xling.scoring.bootstrap import interval, paired, spread
from xling.scoring.cells import difference_cell, interval_cell, sentences_cell
from xling.scoring.result import EvaluationResult

METRICS = ("precision", "recall", "f1")


def combine(runs: dict[int | None, list[EvaluationResult]]) -> list[dict]:
    """One row per evaluation: with several seeds, the mean of each metric, its standard deviation and the
    per-seed values; always how many sentences it rests on, its 95% interval (sentences, and seeds, resampled),
    how many of them the task was trained on, and the paired test against its `baseline` row."""
    rows, counts = [], {}
    for position, first in enumerate(next(iter(runs.values()))):
        results = [seed_results[position] for seed_results in runs.values()]
        if list(runs) == [None]:
            row = replace(first, sentence_counts=None).to_record()
        else:
            per_seed = [seed_row(seed, result) for seed, result in zip(runs, results)]
            row = {"label": first.label, "data": first.data, "setup": first.setup, "per_seed": per_seed}
            row |= {"computed_in": first.computed_in} | over_seeds(per_seed)
        seen, key = [r.seen_in_training for r in results], first.title or first.label
        row |= {"sentences": first.sentences, "seen_in_training": None if None in seen else max(seen)}
        if all(r.sentence_counts is not None for r in results):
            counts[key] = [r.sentence_counts for r in results]
            row["f1_interval"] = list(interval(counts[key]))
        if key in counts and first.baseline in counts:
            row["versus"] = {"baseline": first.baseline, **paired(counts[key], counts[first.baseline])}
        rows.append(row)
    return rows


def over_seeds(per_seed: list[dict]) -> dict:
    """A row's figures over its seeds' rows: each metric's mean and standard deviation, each type's mean F1."""
    summary = {}
    for metric in METRICS:
        summary[metric], summary[f"{metric}_std"] = spread([run[metric] for run in per_seed])
    kinds = sorted({kind for run in per_seed for kind in run["f1_by_type"]})
    return summary | {"f1_by_type": {k: spread([run["f1_by_type"].get(k, 0.0) for run in per_seed])[0] for k in kinds}}


def seed_row(seed: int, result: EvaluationResult) -> dict:
    """One seed's scores in a row: precision, recall, F1 and each entity type's F1."""
    scores = {"precision": result.precision, "recall": result.recall, "f1": result.f1}
    return {"seed": seed, **scores, "f1_by_type": {k: v["f1"] for k, v in result.per_type.items()}}


def results_table(rows: list[dict]) -> str:
    """Markdown; with seeds, F1 per seed and mean ± standard deviation (precision and recall as means); the 95%
    interval, the sentences scored, and the paired test against a baseline row where the recipe names one."""
    seeds = [run["seed"] for run in rows[0].get("per_seed", [])]
    columns = ["evaluation", "data", "setup", *(f"F1 seed {s}" for s in seeds), "precision", "recall", "F1"]
    columns += ["95% interval", "sentences", "against baseline"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        cells = [r["label"], Path(r["data"]).parent.name + "/" + Path(r["data"]).name, f"`{setup_text(r['setup'])}`"]
        cells += [f"{100 * run['f1']:.1f}" for run in r.get("per_seed", [])]
        cells += [
            f"{100 * r['precision']:.1f}",
            f"{100 * r['recall']:.1f}",
            _f1(r),
            interval_cell(r),
            sentences_cell(r),
        ]
        cells.append(_versus(r))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def rich_results(recipe: Recipe, rows: list[dict]) -> Table:
    """The results as the terminal shows them after a run."""
    seeds = f" (seeds {', '.join(map(str, recipe.seeds))})" if recipe.seeds else ""
    table = Table(title=f"Results of {recipe.name}{seeds}")
    for column in ("evaluation", "setup", "P", "R", "F1", "95% interval", "n", "against baseline"):
        table.add_column(column, justify="right" if len(column) <= 2 else "left")
    for r in rows:
        precision_recall = (f"{100 * r[k]:.1f}" for k in ("precision", "recall"))
        table.add_row(
            r["label"],
            setup_text(r["setup"]),
            *precision_recall,
            _f1(r),
            interval_cell(r),
            sentences_cell(r),
            _versus(r),
        )
    return table


def _f1(row: dict) -> str:
    return f"{100 * row['f1']:.1f} ± {100 * row['f1_std']:.1f}" if "per_seed" in row else f"{100 * row['f1']:.1f}"


def _versus(row: dict) -> str:
    return f"{difference_cell(row['versus'])} vs {row['versus']['baseline']}" if "versus" in row else ""


def provenance(recipe: Recipe) -> dict:
    """What a results file says of how it was made (the docs' tables name it)."""
    return {"recipe": recipe.name, "seeds": recipe.seeds, "model": recipe.model, **made_where()}
