"""What `xling evaluate --bootstrap 1000` costs beside a plain evaluate: both on WikiANN-qu silver-dev (392
sentences) with the same loaded tagger, called in turn; the ratio of their median times. The model runs once
either way: the bootstrap resamples the sentences' entity counts.

Uses the `ner-en` of `--workspace` (the zero-shot steps of `recipes/quality-qu.toml`, trained there when missing).

    python -m bench.bootstrap_cost [--rounds 5] [--samples 1000] [--shipped]

`--shipped` times the adapters shipped with xling instead (`Stack(qu, ner-en)`), training nothing.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bench.common import REPO, corpora_root, parsed, setup_threads, time_interleaved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--workspace", default=str(REPO / "xling-workspace" / "active-qu"))
    parser.add_argument("--shipped", action="store_true", help="the shipped adapters, nothing trained")
    parser.add_argument("--limit", type=int, help="score the first N sentences only")
    args = parsed(parser, {"rounds": 1, "samples": 100, "shipped": True, "limit": 40})
    os.environ.setdefault("XLING_CORPORA", str(corpora_root()))
    setup_threads()
    from bench.active_learning import starting_adapters
    from xling.tagging.evaluate import EvaluationOptions, evaluate
    from xling.tagging.spec import TaggerSpec
    from xling.tagging.tagger import Tagger

    if args.shipped:
        workspace = str(Path(tempfile.mkdtemp()) / "empty")  # no adapters of its own: the shipped ones
    else:
        starting_adapters(Path(args.workspace))
        workspace = str(Path(args.workspace) / "seed-1")
    spec = TaggerSpec(lang="qu", task_adapter="ner-en", workspace=workspace)
    tagger = Tagger.load(spec)
    options = {"data": "corpus:wikiann-qu/silver-dev", "tagger": spec, "limit": args.limit}
    plain, resampled = EvaluationOptions(**options), EvaluationOptions(**options, bootstrap=args.samples)
    times = time_interleaved(
        {"plain": lambda: evaluate(plain, tagger), "bootstrap": lambda: evaluate(resampled, tagger)}, args.rounds
    )
    print(
        f"evaluate on {args.limit or 392} sentences: {times['plain']:.2f} s; with --bootstrap {args.samples}: {times['bootstrap']:.2f} s"
    )
    print(f"ratio: {times['bootstrap'] / times['plain']:.3f}x (median of {args.rounds} rounds each, interleaved)")


if __name__ == "__main__":
    main()
