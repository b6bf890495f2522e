"""Where a result or a trained model comes from: the xling version, the commit and the machine."""

from __future__ import annotations

from pathlib import Path


def source_commit() -> str | None:
    """The git commit xling runs from, when it runs from a clone (None for an installed wheel)."""
    import subprocess

    try:
        found = subprocess.run(
            ["git", "-C", str(Path(__file__).parent), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
    except OSError:  # no git on the machine
        return None
    return found.stdout.strip() or None if found.returncode == 0 else None


def repository_url() -> str | None:
    """Where xling's source is (`project.urls` of pyproject.toml, read from the installed package's metadata);
    None where xling runs without being installed."""
    from importlib import metadata

    for distribution in ("xling", "xling-onnx"):
        try:
            urls = metadata.metadata(distribution).get_all("Project-URL") or []
        except metadata.PackageNotFoundError:
            continue
        return next((url for label, _, url in (u.partition(", ") for u in urls) if label == "Repository"), None)
    return None


def made_where() -> dict:
    """The xling version, commit and machine a result was made with."""
    from xling import __version__
    from xling.device import machine_name

    return {"xling_version": __version__, "commit": source_commit(), "machine": machine_name()}
