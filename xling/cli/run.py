"""`xling run RECIPE` and `xling demo`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer
from rich.console import Console

from xling.cli.progress import TrainingBar
from xling.errors import XlingError
from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.paths import default_workspace

console = Console(stderr=True)


def run(
    recipe: Path = typer.Argument(..., help="A recipe TOML file, e.g. recipes/madx-qu.toml."),
    seeds: str = typer.Option(
        None, help="Run every training step once per seed, e.g. 1,2,3 (overrides the recipe's seeds)."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Validate and print which steps would run and why; run nothing."
    ),
):
    """Run a recipe's steps in order, skipping those already done, and print the results table."""
    from xling.recipes import print_plan, read_recipe, run_recipe

    try:
        seed_list = [int(s) for s in seeds.split(",") if s.strip()] if seeds else []
    except ValueError:
        raise XlingError(f"--seeds takes comma-separated integers, e.g. 1,2,3, not {seeds!r}") from None
    if dry_run:
        parsed = read_recipe(recipe)
        print_plan(replace(parsed, seeds=seed_list) if seed_list else parsed, console)
        return
    run_recipe(recipe, console, seeds=seed_list, progress=TrainingBar(console))


def demo(
    workspace: Path = typer.Option(
        None, "--workspace", "-w", help="Where the demo's adapters go (default: WORKSPACE/demo)."
    ),
    model: str = typer.Option(DEFAULT_MODEL, "--model", "-m", help=MODEL_HELP),
    quick: bool = typer.Option(False, help="An even shorter run (a smoke test, not a result)."),
):
    """A small but real MAD-X pipeline on the embedded model: adapters, scores, tagged Quechua."""
    from xling.demo import demo_recipe, demo_sources
    from xling.recipes import run_recipe

    sources = demo_sources(console)
    console.print(f"[bold]data:[/] {sources['source']}")
    target = workspace or default_workspace() / "demo"
    recipe = demo_recipe(sources, target, quick)
    recipe.model = model
    run_recipe(recipe.file, console, recipe=recipe, progress=TrainingBar(console))
    console.print(
        f"\nThe demo's adapters are in {target}. Tag your own text with:\n  xling tag --lang qu -w {target} FILE"
    )
