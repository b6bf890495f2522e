"""The options of `xling run`: light, so that the command line builds it without importing the recipe rooms."""

from __future__ import annotations

from dataclasses import dataclass

from xling.options import comma_ints, opt


@dataclass
class RunRecipeOptions:
    recipe: str = opt(help="A recipe TOML file, e.g. recipes/madx-qu.toml.", argument=1)
    seeds: list[int] = opt(
        factory=list,
        help="Run every training step once per seed, e.g. 1,2,3 (overrides the recipe's seeds).",
        parse=comma_ints,
    )
    model: str | None = opt(
        None, "Run every step on this base model instead of the recipe's, e.g. an encoder xling train-encoder adapted."
    )
    dry_run: bool = opt(False, "Validate and print which steps would run and why; run nothing.")
