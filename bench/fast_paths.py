"""The zero-shot pipeline of `recipes/quality-qu.toml` (both language adapters, the English task adapter, the
evaluations) trained with the CPU's training paths on or off, seed by seed, in one precision.

On: what `xling` does on a CPU (eager attention, dropout masks from 16-bit random numbers, uneven batches
split into passes of their own width). Off: the encoder's own modules in one padded pass, as on a GPU.
`tests/test_cpu_training.py` shows the two compute the same loss and gradients with dropout off; this asks
whether whole runs agree within the seed spread. Writes `results/fast-paths/<on|off>-<precision>.json` in the
format the docs' tables read; seeds already in that file are kept (a seed run again replaces its own), so
the seeds can be run in separate sittings. About 20-30 minutes a seed and setting on 2 CPU cores:

    python -m bench.fast_paths --paths off --seeds 1,2,3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench.common import parsed, shrunk

ROOT = Path(__file__).resolve().parents[1]
ZERO_SHOT = {
    "lang-qu",
    "lang-en",
    "ner-en",
    "English dev",
    "zero-shot",
    "zero-shot, split decoder",
    "zero-shot, task adapter alone",
}


def paths_off() -> None:
    """The generic path: no CPU training context, no row split."""
    import xling.train.loop as loop
    from xling.adapters.row_split import PASS_COST_TOKENS

    loop.cpu_training = lambda encoder, device: contextlib.nullcontext()
    for key in [key for key in PASS_COST_TOKENS if key[0] == "cpu"]:
        del PASS_COST_TOKENS[key]


def merge(out: Path, rows: list[dict], minutes: dict[int, float]) -> tuple[list[dict], dict[int, float]]:
    """The rows and minutes of the seeds in `out` before, with those just run replacing their own: each row's
    seeds merged and its figures taken over them again."""
    from xling.recipes.results import SeedScores, seed_figures

    if not out.exists():
        return rows, minutes
    earlier = json.loads(out.read_text())
    merged = []
    for before, now in zip(earlier["rows"], rows):
        again = {run["seed"] for run in now["per_seed"]}
        runs = sorted([r for r in before["per_seed"] if r["seed"] not in again] + now["per_seed"], key=seed_of)
        seen = [before["seen_in_training"], now["seen_in_training"]]
        means, spreads, by_type = seed_figures([SeedScores(**run) for run in runs])
        row = {key: now[key] for key in ("label", "data", "setup")} | {"per_seed": runs}
        row |= {"computed_in": now["computed_in"]} | means | spreads | {"f1_by_type": by_type}
        row |= {"sentences": now["sentences"]}
        merged.append(row | {"seen_in_training": None if None in seen else max(seen)})
    minutes = {int(seed): m for seed, m in earlier.get("minutes", {}).items()} | minutes
    return merged, dict(sorted(minutes.items()))


def seed_of(run: dict) -> int:
    return run["seed"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", choices=("on", "off"), default="on")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--out", type=Path, help="the result file (default: results/fast-paths/PATHS-PRECISION.json)")
    smoke = Path(tempfile.mkdtemp(prefix="xling-smoke-")) if "--smoke" in sys.argv else None
    args = parsed(parser, {"seeds": "1", "out": smoke and smoke / "fast-paths.json"})
    from xling.recipes.reading import read_recipe
    from xling.recipes.results import provenance
    from xling.recipes.running import run_recipe

    if args.paths == "off":
        paths_off()
    recipe = read_recipe(ROOT / "recipes" / "quality-qu.toml")
    steps = []
    for step in recipe.steps:
        if step.title in ZERO_SHOT:
            options = {**step.options, "precision": args.precision}
            options = shrunk(replace(step, options=options), smoke) if args.smoke else options
            steps.append(replace(step, number=len(steps) + 1, options=options))
    seeds = [int(s) for s in args.seeds.split(",")]
    with tempfile.TemporaryDirectory() as workspace:
        run = replace(recipe, name=f"fast-paths-{args.paths}", workspace=workspace, steps=steps, seeds=seeds)
        started = time.perf_counter()
        rows = [row.to_record() for row in run_recipe(run.file, recipe=run)]
        spent = (time.perf_counter() - started) / 60 / len(seeds)
    out = args.out or ROOT / "results" / "fast-paths" / f"{args.paths}-{args.precision}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    rows, minutes = merge(out, rows, {seed: round(spent, 1) for seed in seeds})
    note = f"CPU training paths {args.paths}; {sum(minutes.values()) / len(minutes):.1f} minutes a seed"
    run = replace(run, seeds=list(minutes))
    data = provenance(run) | {"note": note, "minutes": minutes, "rows": rows}
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
