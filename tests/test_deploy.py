"""A machine that only tags exported ONNX folders: the environment the docs describe (`pip install ./deploy`, the
`xling-onnx` distribution of this tree), its requirements installed once and kept in pytest's cache, its wheel
installed anew each session; skipped with pip's reason when it cannot be built (no package registry)."""

from __future__ import annotations

import os
import subprocess
import sys
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


def test_the_deploy_distribution_pins_what_the_package_and_its_onnx_extra_pin():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deploy = tomllib.loads((REPO / "deploy" / "pyproject.toml").read_text())["project"]
    pinned = {
        (r := Requirement(line)).name: str(r)
        for line in project["dependencies"] + project["optional-dependencies"]["onnx"]
    }
    required = [Requirement(line) for line in deploy["dependencies"]]
    assert required and all(pinned.get(r.name) == str(r) for r in required), [str(r) for r in required]
    assert not {r.name for r in required} & set(TRAINING_STACK)
    assert deploy["scripts"] == project["scripts"] and deploy["license"] == project["license"]
    assert deploy["urls"] == project["urls"]


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
    accepted = subprocess.run([str(deploy_python), "-m", "pip", "check"], capture_output=True, text=True, env=alone)
    assert accepted.returncode == 0 and "No broken requirements found" in accepted.stdout, accepted.stdout
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
    assert said[0].endswith("pip install -e . in xling's clone")


def doc_block(containing: str) -> list[str]:
    """The command lines (comments and blank lines left out) of docs/sharing.md's bash block holding `containing`."""
    text = (REPO / "docs" / "sharing.md").read_text(encoding="utf-8")
    block = next(b.split("```")[0] for b in text.split("```bash\n")[1:] if containing in b.split("```")[0])
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_onnx_and_deploy_blocks_run_as_written(deploy_python, corpora_root, xling_home, tmp_path):
    """docs/sharing.md's two blocks, line by line, in a scratch folder as a clone's root: the export on the embedded
    default and the tags in the full install (this one, with its onnx extra), then the deploy environment (the
    fixture's, made as its first line says) installs `./deploy` from this clone, passes `pip check`, and tags the
    same file with the export to the same lines."""
    full = Path(sys.executable).parent
    deployed = deploy_python.parent
    alone = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    said: dict[str, list[str]] = {}
    for block, bin_dir in (("--format onnx --lang qu --int8", full), ("pip install ./deploy", deployed)):
        for line in doc_block(block):
            if line.startswith(("pip install -e", "python -m venv")):  # this install, and the deploy fixture's venv
                continue
            where = REPO if line.startswith("pip") else tmp_path  # `./deploy` is the clone's
            env = alone | {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(bin_dir.parent)}
            ran = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=where, env=env)
            assert ran.returncode == 0, (line, ran.stderr[-2000:])
            said.setdefault(line, []).append(ran.stdout)
    tag = "xling tag --runtime onnx --task-adapter ./ner-qu-onnx --lang qu quechua.txt"
    assert len(said[tag]) == 2 and said[tag][0] == said[tag][1] and "(LOC)" in said[tag][0]
    assert "No broken requirements found" in said["pip check"][0]
