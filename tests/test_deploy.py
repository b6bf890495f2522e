"""A machine that only tags exported ONNX folders: the environment the docs describe (this tree's wheel with
`--no-deps`, then pyproject.toml's `deploy` group), built once and kept in pytest's cache, its wheel installed
anew each session; skipped with pip's reason when it cannot be built (no package registry)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from bench.deploy_size import REPO, TRAINING_STACK, build_deploy_venv, megabytes
from tests.test_onnx import SENTENCES
from tests.tiny import run_xling
from xling.data.catalog import tomllib

MAX_MEGABYTES = 400
pytestmark = pytest.mark.slow  # builds a virtual environment from the package registry


@pytest.fixture(scope="session")
def deploy_python(pytestconfig) -> Path:
    try:
        return build_deploy_venv(Path(pytestconfig.cache.mkdir("deploy-venv")), fresh=False)
    except RuntimeError as err:
        pytest.skip(f"cannot build the deploy environment: {err}")


def test_the_deploy_group_pins_what_the_package_and_its_onnx_extra_pin():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    pinned = {
        (r := Requirement(line)).name: str(r)
        for line in project["project"]["dependencies"] + project["project"]["optional-dependencies"]["onnx"]
    }
    group = [Requirement(line) for line in project["dependency-groups"]["deploy"]]
    assert group and all(pinned.get(r.name) == str(r) for r in group), [str(r) for r in group]
    assert not {r.name for r in group} & set(TRAINING_STACK)


def test_an_exported_folder_tags_there_as_the_full_install_tags_it(exported, deploy_python, tmp_path):
    home = {"XLING_HOME": str(tmp_path / "home")}
    tag = ["tag", "-", "--runtime", "onnx", "-t", exported, "--lang", "qu", "-f", "jsonl"]
    full = run_xling(*tag, input=SENTENCES, env=home)
    assert full.returncode == 0, full.stderr
    # away from the source tree and its PYTHONPATH, so that the wheel's xling is the one that runs
    alone = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | home
    command = [str(deploy_python), "-m", "xling", *map(str, tag)]
    deployed = subprocess.run(command, input=SENTENCES, capture_output=True, text=True, env=alone, cwd=tmp_path)
    assert deployed.returncode == 0, deployed.stderr
    assert deployed.stdout == full.stdout and '"entities": [{' in full.stdout
    stack = f"import importlib.util as u; print([m for m in {TRAINING_STACK!r} if u.find_spec(m)])"
    found = subprocess.run([str(deploy_python), "-c", stack], capture_output=True, text=True, env=alone, cwd=tmp_path)
    assert found.stdout.strip() == "[]"
    assert megabytes(deploy_python.parents[1]) <= MAX_MEGABYTES
    pytorch = subprocess.run(
        command[:3] + ["tag", "-", "--lang", "qu"],
        input="Qusqu\n",
        capture_output=True,
        text=True,
        env=alone,
        cwd=tmp_path,
    )
    said = pytorch.stderr.strip().splitlines()
    assert pytorch.returncode == 1 and len(said) == 1 and "needs torch, which this install lacks" in said[0]
