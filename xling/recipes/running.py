"""Running a recipe: each seed's run in turn, each step that is not done, its result files, and the evaluations
recorded in the cards of the adapters they score."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from xling.data.fetch import resolve
from xling.errors import XlingError
from xling.fileio import write_json_atomic, write_text_atomic
from xling.recipes.kinds import RUNS, StepContext, produces, step_options
from xling.recipes.planning import (
    is_results_file,
    output_path,
    plan,
    ran_with_record,
    results_dir,
    results_file,
    seeded,
    validate,
)
from xling.recipes.reading import STEPS_FILE, Recipe, Step, read_recipe
from xling.recipes.results import ResultRow, combine, provenance, results_table, rich_results
from xling.roles import TASK
from xling.scoring.bootstrap import interval
from xling.scoring.cells import interval_cell
from xling.scoring.result import EvaluationResult
from xling.tagging.evaluate import leakage_warning
from xling.train.cards.adapter import model_card
from xling.train.cards.common import CARD_FILE
from xling.train.progress import TrainingProgress
from xling.train.report import REPORT_FILE, RecipeEvaluation, RunReport
from xling.workspace import Workspace


def run_step(
    step: Step,
    recipe: Recipe,
    workspace: Workspace,
    console: Console,
    overwrite: bool = False,
    progress: TrainingProgress | None = None,
) -> EvaluationResult | None:
    """Run one step; `progress` shows training (the command line's bar; plain notes when None). Returns the
    result of a step that scores."""
    kind = RUNS[step.run]
    # Commands take `corpus:` names themselves and record them as given, so that reports and model cards name
    # the corpus rather than this machine's copy of it; only tag's input is read as a plain file.
    o = {k: resolve(v) if k == "input" else v for k, v in step.options.items()}
    o = {k: str(results_file(v, recipe, workspace)) if is_results_file(v) else v for k, v in o.items()}
    if kind.writes:
        output = output_path(step, recipe, workspace)
        o["output"] = str(output) if output else None
    run_level = {"model": recipe.model, "workspace": recipe.workspace, "overwrite": overwrite}
    context = StepContext(step, recipe, workspace, console, progress)
    result = kind.perform(step_options(replace(step, options=o), **run_level), context)
    if not kind.scores:
        return None
    result = replace(result, label=o.get("label", step.title), title=step.title, baseline=o.get("baseline"))
    spread = interval_cell(list(interval(result.sentence_counts)))  # counts resampled: no model run
    console.print(
        f"{result.label}: F1 {100 * result.f1:.1f} {spread} (precision {100 * result.precision:.1f}, "
        f"recall {100 * result.recall:.1f}) on {result.sentences:,} sentences",
        highlight=False,
    )
    if warning := leakage_warning(result):
        console.print(warning, highlight=False)
    return result


def _run_once(
    recipe: Recipe, console: Console, on_step: Callable[[Step, str], None] | None, progress: TrainingProgress | None
) -> list[EvaluationResult]:
    """Run every step of one run (one seed) that is not done; returns its evaluation results."""
    workspace = Workspace(recipe.workspace, recipe.model)
    results_path = results_dir(workspace, recipe)
    ran_with = ran_with_record(recipe, workspace)
    seed = f"seed {recipe.seeds[0]}, " if recipe.seeds else ""
    results: list[EvaluationResult] = []
    for step, reason in plan(recipe, workspace):
        where = f"{seed}step {step.number}/{len(recipe.steps)}"
        if reason is None:
            console.print(f"[dim]{where} {step.title}: done already, skipped[/]")
            if on_step:
                on_step(step, "skipped")
        else:
            again = "" if reason == "not run yet" else f", again: {reason}"
            console.rule(f"{where}: {step.title} ({step.run}{again})")
            try:
                result = run_step(step, recipe, workspace, console, reason != "not run yet", progress)
            except XlingError as err:  # the line says which step failed, as the plan named it
                raise XlingError(f"{where} {step.title} ({step.run}) failed: {err}") from None
            if result is not None:
                write_json_atomic(results_path / f"{step.title}.json", result.to_record())
            if on_step:
                on_step(step, "ran")
        # Outputs found without a record are taken as made with the recipe as it stands.
        ran_with[step.title] = step.options
        write_json_atomic(results_path / STEPS_FILE, ran_with)
        if RUNS[step.run].scores:
            results.append(EvaluationResult.read(results_path / f"{step.title}.json"))
    return results


def record_evaluations(runs: list[Recipe], rows: list[ResultRow]) -> None:
    """Each task adapter a run trained gets the evaluations of the setups that use it, in its report and model
    card: its own seed's F1 and the mean ± sd over the recipe's seeds."""
    for run in runs:
        workspace, seed = Workspace(run.workspace, run.model), (run.seeds[0] if run.seeds else None)
        for step in run.steps:
            made = produces(step)
            directory = workspace.adapter_dir(*made) if made and made[0] is TASK else None
            if directory is None or not (directory / REPORT_FILE).is_file():
                continue
            evaluations = [evaluation_record(row, seed) for row in rows if made[1] in row.adapters]
            if evaluations:
                report = replace(RunReport.read(directory), recipe=run.name, evaluations=evaluations)
                write_json_atomic(directory / REPORT_FILE, report.to_record())
                write_text_atomic(directory / CARD_FILE, model_card(report))


def evaluation_record(row: ResultRow, seed: int | None) -> RecipeEvaluation:
    """A results row as an adapter's card shows it: this adapter's seed's F1, and over the seeds."""
    own = next((run.f1 for run in row.per_seed or [] if run.seed == seed), row.f1)
    evaluation = RecipeEvaluation(row.label, row.data, row.setup, own)
    if row.per_seed:
        evaluation = replace(evaluation, seeds=[run.seed for run in row.per_seed], f1_mean=row.f1, f1_std=row.f1_std)
    return evaluation


def run_recipe(
    path: str | Path,
    console: Console | None = None,
    on_step: Callable[[Step, str], None] | None = None,
    recipe: Recipe | None = None,
    seeds: list[int] | None = None,
    progress: TrainingProgress | None = None,
) -> list[ResultRow]:
    """Validate, then run every step not yet done (once per seed); returns the evaluation rows of the results table.
    `progress` shows each training step's progress (the command line passes its bar)."""
    console = console or Console(stderr=True)
    recipe = recipe or read_recipe(path)
    if seeds:
        recipe = replace(recipe, seeds=list(seeds))
    runs = [seeded(recipe, s) for s in recipe.seeds] or [recipe]
    for run in runs:  # every run checked before any starts
        validate(run, Workspace(run.workspace, run.model))
    rows = combine({run.seeds[0] if recipe.seeds else None: _run_once(run, console, on_step, progress) for run in runs})
    record_evaluations(runs, rows)
    if rows:
        results_path = results_dir(Workspace(recipe.workspace, recipe.model), recipe)
        write_text_atomic(results_path / "results.md", results_table(rows))
        write_json_atomic(results_path / "results.json", provenance(recipe) | {"rows": [r.to_record() for r in rows]})
        Console().print(rich_results(recipe, rows))
        console.print(f"results: {results_path / 'results.md'} and results.json")
    return rows
