"""`xling run RECIPE` and `xling demo`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.console import Console

from xling.cli.options import command
from xling.cli.progress import TrainingBar
from xling.demo import DemoOptions
from xling.paths import default_workspace
from xling.recipes.options import RunRecipeOptions

console = Console(stderr=True)


@command(RunRecipeOptions)
def run(options: RunRecipeOptions):
    """Run a recipe's steps in order, skipping those already done, and print the results table."""
    from xling.recipes.planning import print_plan
    from xling.recipes.reading import read_recipe

    parsed = read_recipe(options.recipe)
    parsed = replace(parsed, model=options.model) if options.model else parsed
    if options.dry_run:  # nothing trained or scored: what running imports (torch, seqeval) is not needed
        print_plan(replace(parsed, seeds=options.seeds) if options.seeds else parsed, console)
        return
    from xling.recipes.running import run_recipe

    run_recipe(options.recipe, console, recipe=parsed, seeds=options.seeds, progress=TrainingBar(console))


@command(DemoOptions)
def demo(options: DemoOptions):
    """A small but real MAD-X pipeline on the embedded model: adapters, scores, tagged Quechua."""
    from xling.demo import demo_recipe, demo_sources
    from xling.recipes.running import run_recipe

    sources = demo_sources(console)
    console.print(f"[bold]data:[/] {sources.source}")
    target = Path(options.workspace) if options.workspace else default_workspace() / "demo"
    recipe = demo_recipe(sources, target, options.quick)
    recipe.model = options.model
    run_recipe(recipe.file, console, recipe=recipe, progress=TrainingBar(console))
    console.print(
        f"\nThe demo's adapters are in {target}. Tag your own text with them:\n  xling tag --lang qu -w {target} FILE\n"
        "Without -w, xling tag uses your workspace's adapters, else those shipped with xling (xling models list)."
    )
