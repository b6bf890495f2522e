"""How much a machine that only tags exported ONNX folders installs, against a full install of xling.

The deploy environment is built as the docs say: a fresh venv and `pip install ./deploy` (the `xling-onnx`
distribution of this tree: the package with the deploy requirements only). The full install is measured
in the running environment: the files of every distribution that `pip install xling` pulls in (its requirements,
followed through theirs). Writes `results/deploy/sizes.json`; docs/sharing.md's table is generated from it.

    python -m bench.deploy_size [--venv DIR]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from bench.common import parsed
from xling.cli.app import TRAINING_STACK

REPO = Path(__file__).resolve().parent.parent
RESULT = REPO / "results" / "deploy" / "sizes.json"


def megabytes(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


def pip(python: Path, *arguments: str, cwd: Path | None = None) -> None:
    done = subprocess.run([str(python), "-m", "pip", "-q", *arguments], capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise RuntimeError(f"pip {' '.join(arguments)}: {said}")


def build_deploy_venv(venv: Path, fresh: bool = True) -> Path:
    """The deploy environment at `venv` (its requirements kept unless `fresh` or changed), with this tree's
    `xling-onnx` wheel installed anew; returns its python. Raises RuntimeError with pip's last line when pip cannot
    build it (offline)."""
    python = venv / "bin" / "python"
    marker, requirements = venv / "deploy-requirements", deploy_requirements()
    if fresh or not marker.is_file() or marker.read_text() != "\n".join(requirements):
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        pip(python, "install", *requirements)
        marker.write_text("\n".join(requirements))
    with tempfile.TemporaryDirectory() as scratch:
        wheels = Path(scratch) / "wheels"
        pip(
            python,
            "wheel",
            "--no-deps",
            "--wheel-dir",
            str(wheels),
            str(tracked_copy(Path(scratch) / "tree") / "deploy"),
        )
        # its requirements are those installed above (pip check says so in the test); only the package is new
        pip(python, "install", "--no-deps", "--force-reinstall", *map(str, wheels.glob("xling_onnx-*.whl")))
    return python


def tracked_copy(target: Path) -> Path:
    """The files git tracks in this clone, copied to `target`: the wheel is built there, so that its build
    folders are never written into the clone."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        if (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)
    return target


def deploy_requirements() -> list[str]:
    """What `xling-onnx` requires (deploy/pyproject.toml)."""
    from xling.data.catalog import tomllib

    return tomllib.loads((REPO / "deploy" / "pyproject.toml").read_text())["project"]["dependencies"]


def installed(python: Path) -> list[str]:
    """The distributions in the environment of `python`, lower-cased."""
    listing = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.metadata as m; print('\\n'.join(d.metadata['Name'] for d in m.distributions()))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted({line.strip().lower().replace("_", "-") for line in listing.stdout.splitlines() if line.strip()})


def closure(name: str) -> set[str]:
    """The distributions `pip install NAME` brings (NAME and its requirements, followed), as installed here."""
    seen, todo = set(), [name]
    while todo:
        current = todo.pop().lower().replace("_", "-")
        if current in seen:
            continue
        try:
            requires = metadata.requires(current) or []
        except metadata.PackageNotFoundError:
            continue
        seen.add(current)
        for line in requires:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return seen


def distribution_megabytes(name: str) -> float:
    files = metadata.distribution(name).files or []
    return sum(f.locate().stat().st_size for f in files if Path(f.locate()).is_file()) / 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", help="Where to build the deploy environment (default: a temporary folder).")
    parser.add_argument("--out", default=str(RESULT), help="the JSON file to write")
    args = parsed(parser, {"out": str(Path(tempfile.gettempdir()) / "xling-smoke" / "sizes.json")})
    from xling.fileio import write_json_atomic
    from xling.provenance import made_where

    with tempfile.TemporaryDirectory() as scratch:
        venv = Path(args.venv or Path(scratch) / "deploy")
        python = build_deploy_venv(venv)
        deploy = {"megabytes": round(megabytes(venv), 1), "distributions": installed(python)}
    full = sorted(closure("xling"))
    result = {
        **made_where(),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "deploy": deploy | {"training_stack": [d for d in deploy["distributions"] if d in TRAINING_STACK]},
        "full": {
            "megabytes": round(sum(distribution_megabytes(d) for d in full), 1),
            "distributions": full,
        },
    }
    write_json_atomic(Path(args.out), result)
    print(
        f"deploy: {result['deploy']['megabytes']:.0f} MB, {len(deploy['distributions'])} distributions; "
        f"full install: {result['full']['megabytes']:.0f} MB, {len(full)} distributions; wrote {args.out}"
    )


if __name__ == "__main__":
    main()
