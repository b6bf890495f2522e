"""How tagging cost grows, and what each runtime keeps: PyTorch fp32 and int8, ONNX Runtime fp32 and int8.

Speed: `xling tag` (its code, in-process: `run_in_blocks`, a file into a jsonl file) on 1k, 10k and 100k lines of
the Quechua text corpus (`text/qu`, shuffled with a seed, repeated past its end), one fresh process per runtime
and size so that each peak memory (`VmHWM`, the model included) is its own; lines/s counts the tagging, not
the loading. The runs of one size go side by side, so that the ratios compare like with like on this CPU.

Quality: WikiANN-en dev (`Stack(en, ner-en)`), WikiANN-qu dev and silver-dev (`Stack(qu, ner-en)`) F1 with each
runtime and the same adapters, for each seed's workspace given (`--quality`): mean ± sd over the seeds, the 95%
interval (sentences and seeds resampled), and each int8 runtime paired against its own fp32.

Both use the adapters of `--workspace` (the zero-shot steps of `recipes/quality-qu.toml`, trained there when
missing) and write `results/runtimes/`; the speed docs' table is generated from them.

    python -m bench.runtimes --sizes 1000,10000,100000       # speed; about an hour on 2 CPU cores
    python -m bench.runtimes --largest-for onnx-int8         # 100k lines with ONNX int8 only: 25 minutes
    python -m bench.runtimes --quality                       # F1 with seed 1's adapters (others: --seeds)
    python -m bench.runtimes --quality --seeds 1,2,3 --workspace xling-workspace \
        --data 'wikiann-qu dev,wikiann-qu silver-dev' --record quality-qu

`--seeds 1,2,3` reads `<workspace>/seed-N`: the docs' F1 figures use `xling-workspace`, where
`xling run recipes/quality-qu.toml` trained each seed's language adapters and `ner-en`.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench.common import REPO, parsed, quechua_lines

VARIANTS = {  # name: (runtime, precision)
    "torch-fp32": ("torch", "fp32"),
    "torch-int8": ("torch", "int8"),
    "onnx-fp32": ("onnx", "fp32"),
    "onnx-int8": ("onnx", "int8"),
}
MODEL = "e5-small"
QUALITY = {
    "wikiann-en dev": ("corpus:wikiann-en/dev", "en"),
    "wikiann-qu dev": ("corpus:wikiann-qu/dev", "qu"),
    "wikiann-qu silver-dev": ("corpus:wikiann-qu/silver-dev", "qu"),
}


def write_corpus(path: Path, size: int, seed: int = 0) -> None:
    lines = quechua_lines()
    random.Random(seed).shuffle(lines)
    path.write_text("".join(lines[i % len(lines)] + "\n" for i in range(size)), encoding="utf-8")


def child(variant: str, corpus: Path, workspace: str) -> dict:
    """One measurement, in this (fresh) process: `xling tag`'s block path, timed without the model's loading."""
    from rich.console import Console

    from xling.tagging.blocks import Launch, run_in_blocks
    from xling.tagging.options import TagOptions
    from xling.tagging.spec import TaggerSpec
    from xling.tagging.tagger import Tagger

    runtime, precision = VARIANTS[variant]
    with tempfile.TemporaryDirectory() as out:
        spec = TaggerSpec(lang="qu", model=MODEL, workspace=workspace, runtime=runtime, precision=precision)
        options = TagOptions(input=str(corpus), output=f"{out}/tagged.jsonl", tagger=spec)
        tagger = Tagger.load(options.tagger)
        started = time.perf_counter()
        run_in_blocks(lambda: tagger, options, Launch(), Console(stderr=True, quiet=True))
        seconds = time.perf_counter() - started
    lines = sum(1 for _ in corpus.open(encoding="utf-8"))
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent through fork and exec
    peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM")) / 1024
    return {
        "variant": variant,
        "lines": lines,
        "seconds": round(seconds, 2),
        "lines_per_s": round(lines / seconds, 1),
    } | {"peak_mib": round(peak, 1)}


def measure(variant: str, corpus: Path, workspace: str) -> dict:
    command = [sys.executable, "-m", "bench.runtimes", "--child", variant, "--corpus", str(corpus)]
    done = subprocess.run([*command, "--workspace", workspace], capture_output=True, text=True, cwd=REPO)
    if done.returncode:
        raise SystemExit(f"{variant} on {corpus.name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def speed(sizes: list[int], variants: list[str], workspace: str, largest_for: list[str]) -> list[dict]:
    from xling.tagging.tagger import Tagger

    for variant in variants:  # the ONNX exports are made (and cached) before any timing
        if VARIANTS[variant][0] == "onnx":
            Tagger.load(lang="qu", model=MODEL, workspace=workspace, runtime="onnx", precision=VARIANTS[variant][1])
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            corpus = Path(folder) / f"qu-{size}.txt"
            write_corpus(corpus, size)
            for variant in variants:
                if size == max(sizes) and variant not in largest_for:
                    continue
                rows.append(measure(variant, corpus, workspace))
                print(json.dumps(rows[-1]), flush=True)
    return rows


def quality(workspaces: dict[int, str], variants: list[str], data_sets: list[str]) -> list[dict]:
    """F1 of each runtime with each seed's adapters, in the results files' row shape."""
    from xling.scoring.bootstrap import over_seeds, paired
    from xling.tagging.evaluate import evaluate
    from xling.tagging.options import EvaluationOptions
    from xling.tagging.spec import TaggerSpec

    rows = []
    for label in data_sets:
        data, lang = QUALITY[label]
        counts = {}
        for variant in variants:
            runtime, precision = VARIANTS[variant]
            per_seed, counts[variant] = [], []
            for seed, workspace in workspaces.items():
                spec = TaggerSpec(lang, task_adapter="ner-en", model=MODEL, workspace=workspace, runtime=runtime)
                options = EvaluationOptions(data, replace(spec, precision=precision))
                result = evaluate(options)
                per_seed.append({"seed": seed, "f1": result.f1})
                counts[variant].append(result.sentence_counts)
                print(json.dumps({"data": label, "variant": variant, **per_seed[-1]}), flush=True)
            row = {"label": f"{label}, {variant}", "data": data, "setup": result.setup, "computed_in": variant}
            row |= {"per_seed": per_seed, **over_seeds([s["f1"] for s in per_seed], counts[variant])}
            row["seen_in_training"] = result.seen_in_training
            fp32 = variant.replace("int8", "fp32")
            if fp32 != variant and fp32 in counts:  # what int8 costs, on the same sentences and seeds
                row["versus"] = {"baseline": fp32, **paired(counts[variant], counts[fp32])}
            rows.append(row)
    return rows


def ratios(rows: list[dict]) -> list[str]:
    """What the issue's targets compare, from one run's rows."""
    at = {(r["variant"], r["lines"]): r for r in rows}
    sizes = sorted({r["lines"] for r in rows})
    lines = []
    for size in sizes:
        base = at.get(("torch-fp32", size))
        for variant in VARIANTS:
            if base and (variant, size) in at and variant != "torch-fp32":
                ratio = at[(variant, size)]["lines_per_s"] / base["lines_per_s"]
                lines.append(f"{size:>7,} lines: {variant} / torch-fp32 = {ratio:.2f}x")
    for variant in VARIANTS:
        if (variant, 10_000) in at and (variant, 100_000) in at:
            small, large = at[(variant, 10_000)], at[(variant, 100_000)]
            lines.append(
                f"{variant}: 100k against 10k lines: peak memory {large['peak_mib'] / small['peak_mib']:.2f}x, "
                f"lines/s {large['lines_per_s'] / small['lines_per_s']:.2f}x"
            )
    largest = max((s for s in sizes if ("onnx-int8", s) in at and ("torch-fp32", s) in at), default=None)
    if largest:
        ratio = at[("onnx-int8", largest)]["lines_per_s"] / at[("torch-fp32", largest)]["lines_per_s"]
        lines.append(f"ONNX int8 / PyTorch fp32, {largest:,} lines: {ratio:.2f}x")
    return lines


def record(folder: Path, name: str, data: dict) -> None:
    from xling import __version__
    from xling.device import machine_name
    from xling.provenance import source_commit

    folder.mkdir(parents=True, exist_ok=True)
    data = {"machine": machine_name(), "xling_version": __version__, "commit": source_commit(), "model": MODEL} | data
    (folder / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--largest-for", help="the variants measured at the largest size (default: all)")
    parser.add_argument("--quality", action="store_true", help="measure dev F1 instead of speed")
    parser.add_argument("--seeds", default="1", help="with --quality: seeds whose workspaces have adapters")
    parser.add_argument("--data", default=",".join(QUALITY), help="with --quality: the data sets scored")
    parser.add_argument("--record", default="quality", help="with --quality: results/runtimes/RECORD.json")
    parser.add_argument("--workspace", default=str(REPO / "xling-workspace" / "active-qu"))
    parser.add_argument("--shipped", action="store_true", help="the adapters shipped with xling, nothing trained")
    parser.add_argument("--results", default=str(REPO / "results" / "runtimes"), help="where the JSON files go")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    smoke = Path(tempfile.gettempdir()) / "xling-smoke"
    shrunk = {"sizes": "50", "variants": "torch-fp32,torch-int8", "shipped": True, "results": str(smoke / "runtimes")}
    args = parsed(parser, shrunk | {"workspace": str(smoke / "no-adapters")})
    variants = args.variants.split(",")
    if args.child:
        print(json.dumps(child(args.child, Path(args.corpus), args.workspace)))
        return
    from bench.active_learning import starting_adapters

    if not args.shipped:  # else the workspace has none of its own: tagging takes the shipped ones
        starting_adapters(Path(args.workspace))
    if args.quality:
        seeds = [int(s) for s in args.seeds.split(",")]
        workspaces = {seed: str(Path(args.workspace) / f"seed-{seed}") for seed in seeds}
        rows = quality(workspaces, variants, args.data.split(","))
        record(Path(args.results), args.record, {"recipe": "runtimes", "seeds": seeds, "rows": rows})
        return
    largest_for = args.largest_for.split(",") if args.largest_for else variants
    rows = speed([int(s) for s in args.sizes.split(",")], variants, str(Path(args.workspace) / "seed-1"), largest_for)
    record(Path(args.results), "speed", {"rows": rows, "ratios": ratios(rows)})
    print("\n".join(ratios(rows)))


if __name__ == "__main__":
    main()
