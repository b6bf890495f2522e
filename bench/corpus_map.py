"""Lines per second of the corpus recipes in docs/python-api.md, one after another in one run: `Tagger.pipe`
over the lines, `datasets.map(batched=True)`, and Ray Data's `map_batches` with one tagger per actor (one actor,
and one per core), each tagging the same random Quechua corpus lines with the shipped `Stack(qu, ner-qu)` on the
embedded model and a tagger loaded before the clock starts (Ray's actors load theirs on the clock: that is what a
job pays). Writes `results/corpus-map/NAME.json`. About 3 minutes on 2 CPU cores:

    python -m bench.corpus_map [--lines 2000] [--json results/corpus-map/NAME.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from bench.common import REPO, parsed, quechua_lines, setup_threads
from xling import Tagger, __version__
from xling.device import machine_name
from xling.provenance import source_commit

BATCH = 256


def entities_of(tagger, texts: list[str]) -> list[list[dict]]:
    return [[span.to_dict() for span in found] for found in tagger(texts)]


class Entities:
    """The docs' Ray recipe: a tagger per actor."""

    def __init__(self):
        self.tagger = Tagger.load(lang="qu")

    def __call__(self, batch):
        return batch | {"entities": entities_of(self.tagger, list(batch["text"]))}


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def with_ray(path: Path, actors: int) -> float:
    import ray

    ray.init(num_cpus=actors + 1, include_dashboard=False, log_to_driver=False)  # the actors and the reading
    try:
        data = ray.data.read_text(str(path))
        pool = ray.data.ActorPoolStrategy(size=actors)
        return timed(lambda: data.map_batches(Entities, compute=pool, batch_size=BATCH).materialize())
    finally:
        ray.shutdown()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--json", default=str(REPO / "results" / "corpus-map" / "xeon-2-cores.json"))
    args = parsed(parser, {"lines": 16, "json": None})
    from datasets import Dataset

    setup_threads()
    lines = quechua_lines(args.lines, seed=1)
    tagger = Tagger.load(lang="qu")
    entities_of(tagger, lines[:BATCH])  # warm up
    dataset = Dataset.from_dict({"text": lines})
    seconds = {
        "Tagger.pipe": timed(lambda: [t.spans for t in tagger.pipe(lines)]),
        "datasets.map(batched=True)": timed(
            lambda: dataset.map(lambda b: {"entities": entities_of(tagger, b["text"])}, batched=True, batch_size=BATCH)
        ),
    }
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "quechua.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        cores = os.cpu_count() or 1
        for actors in sorted({1, cores}):
            seconds[f"Ray Data map_batches, {actors} actor{'s' * (actors > 1)}"] = with_ray(path, actors)
    result = {
        "machine": machine_name(),
        "xling": __version__,
        "commit": source_commit(),
        "tagger": "Stack(qu, ner-qu), the shipped adapters on the embedded model",
        "lines": len(lines),
        "batch_size": BATCH,
        "rows": {
            name: {"seconds": round(s, 2), "lines_per_second": round(len(lines) / s, 1)} for name, s in seconds.items()
        },
    }
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    for name, row in result["rows"].items():
        print(f"{name:40} {row['lines_per_second']:8.1f} lines/s ({row['seconds']} s)")


if __name__ == "__main__":
    main()
