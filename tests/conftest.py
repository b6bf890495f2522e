"""Shared fixtures: an isolated XLING_HOME, the real corpora when present, tiny random models."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.tiny import save_tiny_model

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def xling_home(tmp_path_factory):
    """Every test session converts into, and trains under, its own XLING_HOME."""
    home = tmp_path_factory.mktemp("xling-home")
    previous = os.environ.get("XLING_HOME")
    os.environ["XLING_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("XLING_HOME", None)
    else:
        os.environ["XLING_HOME"] = previous


@pytest.fixture(scope="session")
def corpora_root() -> Path:
    root = Path(os.environ.get("XLING_CORPORA", REPO.parent / "shared" / "corpora"))
    if not (root / "ner").is_dir():
        pytest.skip(f"real corpora not found at {root} (set XLING_CORPORA)")
    return root


@pytest.fixture(scope="session")
def embedded(xling_home):
    """The converted embedded default, loaded once per session."""
    from xling.models import load_model

    return load_model("e5-small")


@pytest.fixture(params=["bert", "xlm-roberta", "distilbert"])
def tiny_model_dir(request, tmp_path) -> Path:
    return save_tiny_model(request.param, tmp_path / request.param)
