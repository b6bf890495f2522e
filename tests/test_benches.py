"""Benches cannot rot: every script in `bench/` imports, answers `--help` and runs its smoke path (`--smoke`: the
smallest real run, nothing written into results/ or docs/; timing stays in the benches)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.common import MISSING  # a bench's exit code where its run needs what this machine lacks
from tests.browser import chromium_paths

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.stem for p in (REPO / "bench").glob("*.py") if p.stem not in ("__init__", "common"))
# Benches whose smoke path reads the real corpora, and one that drives Chromium
NEEDS_CORPORA = (
    "active_learning", "annotate_latency", "annotation_round", "bootstrap_cost", "corpus_map", "encoder_curve",
    "encoder_step", "fast_paths", "mlm_step", "pipe_throughput", "quantization_gap", "row_split", "runtimes",
    "serve_load", "tag_throughput", "task_step",
)  # fmt: skip
NEEDS_CHROMIUM = ("annotate_latency",)


def bench(script: str, *arguments: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", f"bench.{script}", *arguments]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_bench_imports_and_answers_help(script):
    done = bench(script, "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:")
    assert "--smoke" in done.stdout  # every bench has a smoke path: a new one comes with it


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_a_bench_s_smoke_path_runs_and_writes_nothing_into_results(script, request):
    if script in NEEDS_CORPORA:
        request.getfixturevalue("corpora_root")  # skipped, with the reason, where the corpora are absent
    if script in NEEDS_CHROMIUM and chromium_paths() is None:
        pytest.skip("chromium and chromium-driver are not installed (apt install chromium chromium-driver)")
    before = committed_outputs()
    done = bench(script, "--smoke")
    if done.returncode == MISSING:
        pytest.skip(done.stderr.strip().splitlines()[-1])  # what it needs, as it says
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()  # it reports what it measured
    assert committed_outputs() == before


def committed_outputs() -> dict[Path, int]:
    """When each file a bench's real run writes into the repository (results and the docs' plots) last changed."""
    files = [*(REPO / "results").rglob("*"), *(REPO / "docs").rglob("*")]
    return {path: path.stat().st_mtime_ns for path in files if path.is_file()}
