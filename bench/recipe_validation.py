"""Validating a recipe is linear in its steps: `xling run RECIPE --dry-run` on recipes of N and 10 N steps (a
language adapter, then evaluation steps that each need the adapters trained before them), timed in one run.
Prints the seconds of each and their ratio (about 10 when linear; it was about 100 when each step rebuilt the
options of every step before it, and 5,000 steps took over 300 s).

    python -m bench.recipe_validation [--steps 500]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rich.console import Console

from bench.common import parsed


def recipe_text(steps: int, folder: Path) -> str:
    text, data = folder / "x.txt", folder / "d.conll"
    head = f'[recipe]\nname = "big"\nmodel = "e5-small"\nworkspace = "{folder / "ws"}"\n\n'
    head += f'[[step]]\ntitle = "lang-qu"\nrun = "train-lang"\nlang = "qu"\ncorpus = ["{text}"]\n'
    head += f'\n[[step]]\ntitle = "ner-qu"\nrun = "train-task"\nlang = "qu"\ntrain = "{data}"\ndev = "{data}"\n'
    evaluation = '\n[[step]]\ntitle = "ev{n}"\nrun = "evaluate"\ndata = "{data}"\nlang = "qu"\nlabel = "l{n}"\n'
    return head + "".join(evaluation.format(n=n, data=data) for n in range(2, steps))


def seconds(steps: int, folder: Path) -> float:
    from xling.recipes.planning import print_plan
    from xling.recipes.reading import read_recipe

    file = folder / f"r{steps}.toml"
    file.write_text(recipe_text(steps, folder))
    (folder / "x.txt").write_text("Qusqu llaqta\n")
    (folder / "d.conll").write_text("Qusqu B-LOC\nllaqta O\n\n")
    started = time.perf_counter()
    print_plan(read_recipe(file), Console(file=open("/dev/null", "w")))  # noqa: SIM115 - closed with the process
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500, help="the smaller recipe's steps (the larger has 10 times)")
    args = parsed(parser, {"steps": 5})
    with tempfile.TemporaryDirectory() as folder:
        small, large = (seconds(n, Path(folder)) for n in (args.steps, 10 * args.steps))
    print(f"{args.steps:,} steps: {small:.2f} s; {10 * args.steps:,} steps: {large:.2f} s; ratio {large / small:.1f}")


if __name__ == "__main__":
    main()
