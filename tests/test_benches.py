"""Benches cannot rot: every script in `bench/` imports and answers `--help` (timing stays in the benches)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.stem for p in (REPO / "bench").glob("*.py") if p.stem not in ("__init__", "common"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_bench_imports_and_answers_help(script):
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{script}", "--help"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:")
