"""Shared fixtures: an isolated XLING_HOME, the real corpora when present, tiny random models."""

from __future__ import annotations

import os
from pathlib import Path

# Each xdist worker computes on its share of the cores, and so do the processes its tests start: two workers of
# two torch threads each on 2 cores wait on each other's threads, several times slower. Set before torch loads.
if (workers := os.environ.get("PYTEST_XDIST_WORKER_COUNT")) and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // int(workers)))

import pytest
from hypothesis import HealthCheck, settings

from tests.tiny import save_tiny_model, synthetic_conll

REPO = Path(__file__).resolve().parent.parent

# Hypothesis: 200 examples a fuzzed test in CI; HYPOTHESIS_PROFILE=deep runs 2,000 on demand.
for name, examples in (("ci", 200), ("deep", 2000)):
    settings.register_profile(name, max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(items):
    """The quick loop (`pytest -m quick`, CONTRIBUTING.md): every test not marked `slow`, the ones that take six
    seconds or more on 2 cores (processes started and killed, virtual environments built, whole exports)."""
    for item in items:
        if item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.quick)


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
        pytest.skip(f"the real corpora: set XLING_CORPORA to the folder holding ner/ (docs/recipes.md; not at {root})")
    return root


@pytest.fixture(scope="session")
def embedded(xling_home):
    """The converted embedded default, loaded once per session."""
    from xling.models import load_model

    return load_model("e5-small")


@pytest.fixture(params=["bert", "xlm-roberta", "distilbert", "deberta-v2"])
def tiny_model_dir(request, tmp_path) -> Path:
    return save_tiny_model(request.param, tmp_path / request.param)


@pytest.fixture(scope="session")
def trained_workspace(tmp_path_factory):
    """A tiny BERT with English and Quechua language adapters and an `ner-en` task adapter."""
    from xling.train.config import TaskAdapterOptions, TrainConfig
    from xling.train.language import train_language_adapter
    from xling.train.task import train_task_adapter
    from xling.train.text_config import LanguageAdapterOptions

    root = tmp_path_factory.mktemp("trained")
    model_dir = save_tiny_model("bert", root / "tinybert")
    train = synthetic_conll(root / "train", 200, 1)
    dev = synthetic_conll(root / "dev", 40, 2)
    for lang in ("en", "qu"):
        train_language_adapter(
            LanguageAdapterOptions(
                lang=lang,
                corpus=[str(train)],
                model=str(model_dir),
                workspace=str(root / "ws"),
                seq_len=32,
                training=TrainConfig(max_steps=5, eval_every=5, checkpoint_every=5, batch_size=4),
            )
        )
    train_task_adapter(
        TaskAdapterOptions(
            lang="en",
            train=str(train),
            dev=str(dev),
            model=str(model_dir),
            workspace=str(root / "ws"),
            training=TrainConfig(epochs=4, batch_size=16, learning_rate=5e-3, eval_every=None, patience=2),
        )
    )
    return root, model_dir, train, dev


@pytest.fixture
def copied_workspace(tmp_path, trained_workspace):
    """A copy of the trained workspace to damage: (workspace, model dir, the model's folder in it, dev data)."""
    import shutil

    root, model_dir, train, dev = trained_workspace
    shutil.copytree(root / "ws", tmp_path / "ws")
    return tmp_path / "ws", model_dir, tmp_path / "ws" / model_dir.name, dev


@pytest.fixture(scope="session")
def exported(trained_workspace, tmp_path_factory):
    """The trained workspace's `Stack(qu, ner-en)` exported to ONNX, fp32 and int8 (`xling export`)."""
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    from tests.tiny import run_xling

    root, model_dir, _, _ = trained_workspace
    target = tmp_path_factory.mktemp("onnx") / "tagger"
    where = ["--model", str(model_dir), "-w", str(root / "ws")]
    done = run_xling("export", "ner-en", target, "--format", "onnx", "--lang", "qu", "--int8", *where)
    assert done.returncode == 0, done.stderr
    return target
