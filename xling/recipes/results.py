"""A recipe's results: one row per evaluation (over seeds: mean, sd, the pooled interval and the paired test against
its baseline), as a markdown table and a JSON file that says how it was made."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from xling.provenance import made_where
from xling.recipes.reading import Recipe
from xling.scoring.bootstrap import interval, paired, spread
from xling.scoring.cells import difference_cell, interval_cell, sentences_cell

METRICS = ("precision", "recall", "f1")


def combine(runs: dict[int | None, list[dict]]) -> list[dict]:
    """One row per evaluation: with several seeds, the mean of each metric, its standard deviation and the
    per-seed values; always how many sentences it rests on, its 95% interval (sentences, and seeds, resampled),
    how many of them the task was trained on, and the paired test against its `baseline` row."""
    rows, counts = [], {}
    for position, first in enumerate(next(iter(runs.values()))):
        results = [seed_results[position] for seed_results in runs.values()]
        if list(runs) == [None]:
            row = {k: v for k, v in first.items() if k != "sentence_counts"}
        else:
            per_seed = [{"seed": seed, **{m: r[m] for m in METRICS}, **type_f1(r)} for seed, r in zip(runs, results)]
            row = {"label": first["label"], "data": first["data"], "setup": first["setup"], "per_seed": per_seed}
            row["computed_in"] = first.get("computed_in")
            for metric in METRICS:
                row[metric], row[f"{metric}_std"] = spread([run[metric] for run in per_seed])
            if all("f1_by_type" in run for run in per_seed):
                kinds = sorted({kind for run in per_seed for kind in run["f1_by_type"]})
                row["f1_by_type"] = {k: spread([run["f1_by_type"].get(k, 0.0) for run in per_seed])[0] for k in kinds}
        seen, key = [r.get("seen_in_training") for r in results], first.get("title", first["label"])
        row |= {"sentences": first["sentences"], "seen_in_training": None if None in seen else max(seen)}
        if all("sentence_counts" in r for r in results):
            counts[key] = [r["sentence_counts"] for r in results]
            row["f1_interval"] = list(interval(counts[key]))
        if key in counts and first.get("baseline") in counts:
            row["versus"] = {"baseline": first["baseline"], **paired(counts[key], counts[first["baseline"]])}
        rows.append(row)
    return rows


def type_f1(result: dict) -> dict:
    """{"f1_by_type": {type: F1}} of an evaluation that scored its types, else nothing."""
    return {"f1_by_type": {k: v["f1"] for k, v in result["per_type"].items()}} if "per_type" in result else {}


def results_table(rows: list[dict]) -> str:
    """Markdown; with seeds, F1 per seed and mean ± standard deviation (precision and recall as means); the 95%
    interval, the sentences scored, and the paired test against a baseline row where the recipe names one."""
    seeds = [run["seed"] for run in rows[0].get("per_seed", [])]
    columns = ["evaluation", "data", "setup", *(f"F1 seed {s}" for s in seeds), "precision", "recall", "F1"]
    columns += ["95% interval", "sentences", "against baseline"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        cells = [r["label"], Path(r["data"]).parent.name + "/" + Path(r["data"]).name, f"`{r['setup']}`"]
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
            r["label"], r["setup"], *precision_recall, _f1(r), interval_cell(r), sentences_cell(r), _versus(r)
        )
    return table


def _f1(row: dict) -> str:
    return f"{100 * row['f1']:.1f} ± {100 * row['f1_std']:.1f}" if "per_seed" in row else f"{100 * row['f1']:.1f}"


def _versus(row: dict) -> str:
    return f"{difference_cell(row['versus'])} vs {row['versus']['baseline']}" if "versus" in row else ""


def provenance(recipe: Recipe) -> dict:
    """What a results file says of how it was made (the docs' tables name it)."""
    return {"recipe": recipe.name, "seeds": recipe.seeds, "model": recipe.model, **made_where()}
