"""Before a recipe runs: each seed's run of it, its validation (every problem at once), and the plan of which
steps must run and why, judged as make judges targets: a step is done when its output file exists, and out of
date when its options were edited or an adapter it needs was saved after it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.console import Console

from xling.adapters.files import CONFIG_FILE
from xling.data.catalog import PREFIX, load_catalog
from xling.data.fetch import FetchError, resolve
from xling.data.hub_datasets import hub_dataset_id
from xling.errors import XlingError
from xling.fileio import read_json
from xling.names import inside, is_hub_name, is_path, no_link
from xling.recipes.kinds import KEYS, RUNS, Adapter, produces, requires, step_options, trains
from xling.recipes.reading import STEPS_FILE, Recipe, Step
from xling.roles import TASK_FILE, Role
from xling.workspace import Workspace

PATH_KEYS = {"corpus", "train", "dev", "data", "input", "parallel"}
RESULTS_PREFIX = "results:"  # `results:FILE`: a file an earlier step of the recipe wrote among its results


def seeded(recipe: Recipe, seed: int) -> Recipe:
    """The recipe's run for one seed: its own workspace, and the seed in every training step."""
    clashing = [s.where(recipe.file) for s in recipe.steps if "seed" in s.options]
    if clashing:
        raise XlingError(
            f"{'; '.join(clashing)}: key 'seed' conflicts with the recipe's seeds, which set it for every training step"
        )
    root = Workspace(recipe.workspace, recipe.model).root / f"seed-{seed}"
    steps = [replace(s, options={**s.options, "seed": seed}) if trains(s) else s for s in recipe.steps]
    return replace(recipe, workspace=str(root), seeds=[seed], steps=steps)


def validate(recipe: Recipe, workspace: Workspace, fetching: bool = True) -> None:
    """Every problem of the recipe at once, in one line; without `fetching` (a dry run) no corpus is fetched,
    and one that would be is taken as there."""
    problems: list[str] = []
    catalog = load_catalog()
    made: set[Adapter] = set()
    claimed = _own_files(recipe, workspace)
    unreachable: dict[str, FetchError] = {}
    for step in recipe.steps:
        where = step.where(recipe.file)
        if step.run not in KEYS:
            problems.append(f"{where}: unknown run {step.run!r}; choose one of {', '.join(KEYS)}")
            continue
        unknown = set(step.options) - KEYS[step.run]
        problems += [f"{where}: unknown key {key!r}" for key in sorted(unknown)]
        try:
            step_options(step)
        except XlingError as err:
            problems.append(f"{where}: {err}")
            continue
        for key in sorted(PATH_KEYS & set(step.options)):
            for value in _as_list(step.options[key]):
                if is_results_file(value):
                    wanted = results_file(value, recipe, workspace)
                    if not any(wanted == output or wanted.is_relative_to(output) for output in claimed):
                        problems.append(f"{where}: key {key!r}: no earlier step writes {value}")
                    continue
                try:
                    resolved = _resolved(value, catalog, unreachable, fetching)
                except XlingError as err:
                    problems.append(f"{where}: key {key!r}: {err}")
                    continue
                if (
                    not resolved.startswith(PREFIX)  # a corpus a dry run leaves to be fetched
                    and hub_dataset_id(resolved) is None
                    and not Path(resolved).exists()
                    and not any(c in resolved for c in "*?[")
                ):
                    problems.append(f"{where}: key {key!r}: {value} not found")
        for role, name in requires(step, recipe, workspace):
            if is_hub_name(name):  # fetched when the step runs
                continue
            if is_path(name):
                if not Path(name).expanduser().is_dir():
                    problems.append(f"{where}: the {role} adapter {name} is not a directory")
                continue
            if (role, name) not in made and workspace.find(role, name) is None:  # its own, else a shipped one
                problems.append(
                    f"{where}: needs the {role} adapter {name!r}, which no earlier step trains, the workspace does not "
                    "hold and xling does not ship"
                )
        if RUNS[step.run].writes:  # after its inputs: a step never reads what it writes itself
            try:
                claimed = _claim_output(step, recipe, workspace, claimed)
            except XlingError as err:
                problems.append(f"{where}: {err}")
        if (product := produces(step)) in made:
            problems.append(f"{where}: trains the {product[0]} adapter {product[1]!r} again; give it another name")
        if product:
            made.add(product)
        problems += _baseline_problems(recipe, step)
    if len(problems) == 1:
        raise XlingError(problems[0])
    if problems:  # numbered in the one line an error is
        listed = "; ".join(f"({number}) {problem}" for number, problem in enumerate(problems, start=1))
        raise XlingError(f"recipe {recipe.file} has {len(problems)} problems: {listed}")


def _resolved(value: str, catalog: dict, unreachable: dict[str, FetchError], fetching: bool) -> str:
    """resolve(), except that a corpus whose fetch failed once fails again at once: offline, each step naming it
    would otherwise wait through the hub client's retries again."""
    name = value.removeprefix(PREFIX).partition("/")[0] if value.startswith(PREFIX) else None
    if name in unreachable:
        raise unreachable[name]
    try:
        return resolve(value, catalog, fetching)
    except FetchError as err:
        unreachable[name] = err
        raise


def _baseline_problems(recipe: Recipe, step: Step) -> list[str]:
    """An evaluate step's `baseline` names an earlier evaluate step on the same data."""
    baseline = step.options.get("baseline")
    if step.run != "evaluate" or baseline is None:
        return []
    earlier = {s.title: s for s in recipe.steps[: step.number - 1] if s.run == "evaluate"}
    if not isinstance(baseline, str) or baseline not in earlier:
        return [f"{step.where(recipe.file)}: baseline {baseline!r} is no earlier evaluate step's title"]
    if earlier[baseline].options.get("data") != step.options.get("data"):
        return [f"{step.where(recipe.file)}: baseline {baseline!r} scores other data; a paired test needs the same"]
    return []


def _own_files(recipe: Recipe, workspace: Workspace) -> dict[Path, str]:
    """The files the recipe itself writes in its results folder, and what each one is."""
    results = results_dir(workspace, recipe)
    own = {results / name: "the recipe's own result file" for name in (STEPS_FILE, "results.md", "results.json")}
    scoring = [step for step in recipe.steps if step.run in RUNS and RUNS[step.run].scores]
    return own | {results / f"{step.title}.json": f"the result of step {step.number}" for step in scoring}


def _claim_output(step: Step, recipe: Recipe, workspace: Workspace, claimed: dict[Path, str]) -> dict[Path, str]:
    """`claimed` with this step's output added; an output that another file of the recipe's takes is refused."""
    output = output_path(step, recipe, workspace)
    if output in claimed:
        raise XlingError(f"key 'output' {output.name!r} is {claimed[output]}; choose another file name")
    return claimed | ({output: f"the output of step {step.number}"} if output else {})


def results_dir(workspace: Workspace, recipe: Recipe) -> Path:
    return no_link(workspace.model_dir, Path("results") / recipe.name, "the recipe's results")


def is_results_file(value) -> bool:
    return isinstance(value, str) and value.startswith(RESULTS_PREFIX)


def results_file(value: str, recipe: Recipe, workspace: Workspace) -> Path:
    """The path `results:FILE` names: FILE among the recipe's results."""
    name = value.removeprefix(RESULTS_PREFIX)
    return inside(results_dir(workspace, recipe), name, f"{value!r}")


def output_path(step: Step, recipe: Recipe, workspace: Workspace) -> Path | None:
    """A tag or analyze step's `output` (an analysis's default file name), inside the recipe's results; None
    for a tag step that prints."""
    output = step_options(step).output_file()
    return inside(results_dir(workspace, recipe), output, f"key 'output' of step {step.title!r}") if output else None


def output_file(step: Step, recipe: Recipe, workspace: Workspace) -> Path | None:
    """The file whose presence says a step finished (saves are atomic), or None."""
    if produces(step):
        return _adapter_file(workspace, *produces(step))
    if RUNS[step.run].scores:
        return results_dir(workspace, recipe) / f"{step.title}.json"
    if not RUNS[step.run].writes:
        return None
    output = output_path(step, recipe, workspace)
    return RUNS[step.run].finished(output) if output else None


def _adapter_file(workspace: Workspace, role: Role, name: str) -> Path:
    directory = workspace.adapter_dir(role, name)
    return directory / TASK_FILE if (directory / TASK_FILE).is_file() else directory / CONFIG_FILE


def rerun_reason(step: Step, recipe: Recipe, workspace: Workspace, ran_with: dict) -> str | None:
    """Why a finished step is out of date, as make would judge it: edited options, or inputs saved after it."""
    if step.title in ran_with and ran_with[step.title] != step.options:
        return "its options changed since it ran"
    made_at = output_file(step, recipe, workspace).stat().st_mtime
    newer = [
        name
        for role, name in requires(step, recipe, workspace)
        if (f := _adapter_file(workspace, role, name)).is_file() and f.stat().st_mtime > made_at
    ]
    if newer:
        return f"{', '.join(newer)} retrained since it ran"
    rewritten = [v for v, f in results_inputs(step, recipe, workspace) if f.is_file() and f.stat().st_mtime > made_at]
    return f"{', '.join(rewritten)} written again since it ran" if rewritten else None


def results_inputs(step: Step, recipe: Recipe, workspace: Workspace) -> list[tuple[str, Path]]:
    """The `results:FILE` values of a step's path keys, with the files they name."""
    values = [v for key in PATH_KEYS & set(step.options) for v in _as_list(step.options[key])]
    return [(v, results_file(v, recipe, workspace)) for v in values if is_results_file(v)]


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def ran_with_record(recipe: Recipe, workspace: Workspace) -> dict:
    """The options each step last ran with (`steps.json` beside the results)."""
    file = results_dir(workspace, recipe) / STEPS_FILE
    ran_with = read_json(file) if file.is_file() else {}
    if not isinstance(ran_with, dict) or not all(isinstance(options, dict) for options in ran_with.values()):
        raise XlingError(f"{file} is damaged (not a table of each step's options); delete it to run every step again")
    return ran_with


def plan(recipe: Recipe, workspace: Workspace) -> list[tuple[Step, str | None]]:
    """Each step with why it must run ("not run yet", edited, inputs retrained), or None when it is done."""
    ran_with = ran_with_record(recipe, workspace)
    remade: set[tuple[str, str]] = set()
    rewritten: set[Path] = set()  # outputs of writing steps that run again
    planned = []
    for step in recipe.steps:
        out = output_file(step, recipe, workspace)
        reason = rerun_reason(step, recipe, workspace, ran_with) if out and out.is_file() else "not run yet"
        if reason is None and (
            stale := [name for role, name in requires(step, recipe, workspace) if (role, name) in remade]
        ):
            reason = f"{', '.join(stale)} will be retrained before it"
        if reason is None and (
            again := [
                v for v, f in results_inputs(step, recipe, workspace) if any(f.is_relative_to(w) for w in rewritten)
            ]
        ):
            reason = f"{', '.join(again)} will be written again before it"
        if reason is not None and produces(step):
            remade.add(produces(step))
        if reason is not None and RUNS[step.run].writes and (written := output_path(step, recipe, workspace)):
            rewritten.add(written)
        planned.append((step, reason))
    return planned


def print_plan(recipe: Recipe, console: Console) -> None:
    """What `xling run` would do, step by step (and seed by seed), without doing it."""
    for run in [seeded(recipe, s) for s in recipe.seeds] or [recipe]:
        workspace = Workspace(run.workspace, run.model)
        validate(run, workspace, fetching=False)
        console.print(
            f"[bold]{run.name}[/]{f' seed {run.seeds[0]}' if recipe.seeds else ''}: workspace {workspace.root}"
        )
        for step, reason in plan(run, workspace):
            what = "skip: done" if reason is None else f"run: {reason}"
            console.print(f"  step {step.number}/{len(run.steps)} {step.title} ({step.run}): {what}", highlight=False)
