"""`--ensemble`: several task adapters' word probabilities averaged label by label, then decoded once."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from tests.test_soup import shifted
from tests.tiny import run_xling
from xling.adapters.files import HEAD_CONFIG_FILE, HEAD_WEIGHTS_FILE
from xling.adapters.weights import read_weights, write_weights
from xling.errors import XlingError
from xling.tagging.spec import TaggerSpec
from xling.tagging.tagger import Tagger

SENTENCES = [["juan", "lima", "the", "city", "of", "qusqu"], ["maria", "of", "peru"], ["runa", "wasi", "qusqu"]]


def permuted(workspace, model_dir, source: str, name: str) -> None:
    """A copy of task adapter `source` whose head lists its labels in reverse: the same tagger, written otherwise."""
    folder = workspace / model_dir.name / "task"
    shutil.copytree(folder / source, folder / name)
    head = read_weights(folder / source / HEAD_WEIGHTS_FILE)
    write_weights(folder / name / HEAD_WEIGHTS_FILE, {k: v.flip(0) for k, v in head.items()})
    for file, more in ((HEAD_CONFIG_FILE, {}), ("task.json", {"name": name})):
        record = json.loads((folder / source / file).read_text())
        (folder / name / file).write_text(json.dumps(record | {"labels": record["labels"][::-1]} | more))


def load(workspace, model_dir, task: str, *ensemble: str):
    return Tagger.load(
        TaggerSpec(
            lang="qu", task_adapter=task, ensemble=list(ensemble), model=str(model_dir), workspace=str(workspace)
        )
    )


def test_an_ensemble_decodes_the_mean_of_its_members_probabilities_in_one_label_order(copied_workspace):
    workspace, model_dir, _, _ = copied_workspace
    shifted(workspace, model_dir, "ner-up", 0.05)
    permuted(workspace, model_dir, "ner-up", "ner-up-reversed")
    ensemble = load(workspace, model_dir, "ner-en", "ner-up-reversed")
    alone, other = load(workspace, model_dir, "ner-en"), load(workspace, model_dir, "ner-up")
    assert ensemble.labels == alone.labels and other.labels == alone.labels
    mean = [(a + b) / 2 for a, b in zip(alone.word_probabilities(SENTENCES), other.word_probabilities(SENTENCES))]
    got = ensemble.word_probabilities(SENTENCES)
    assert all(np.allclose(g, m, atol=1e-6) for g, m in zip(got, mean))
    assert not np.allclose(mean[0], alone.word_probabilities(SENTENCES)[0], atol=1e-3)  # the members differ
    assert ensemble.head == "ner-en+ner-up-reversed" and ensemble.setup.startswith("Mean(Stack(")
    three = load(workspace, model_dir, "ner-en", "ner-up-reversed", "ner-up").word_probabilities(SENTENCES)
    weighted = [
        (a + 2 * b) / 3 for a, b in zip(alone.word_probabilities(SENTENCES), other.word_probabilities(SENTENCES))
    ]
    assert all(np.allclose(g, m, atol=1e-6) for g, m in zip(three, weighted))


def test_an_ensemble_is_scored_by_evaluate_and_refuses_other_label_sets(copied_workspace, tmp_path):
    workspace, model_dir, model_ws, dev = copied_workspace
    shifted(workspace, model_dir, "ner-up", 0.05)
    where = ["-m", model_dir, "-w", workspace, "--lang", "qu", "--json"]
    done = run_xling("evaluate", "ner", dev, "-t", "ner-en", "--ensemble", "ner-up", *where)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["task_adapter"] == "ner-en+ner-up" and result["setup"].startswith("Mean(")
    assert result["seen_in_training"] == 0  # the members' fingerprints: trained on train, not on dev

    task = model_ws / "task" / "ner-up" / "task.json"
    labels = json.loads(task.read_text())["labels"]
    head = model_ws / "task" / "ner-up" / HEAD_CONFIG_FILE
    for file in (task, head):
        record = json.loads(file.read_text())
        file.write_text(json.dumps(record | {"labels": [*labels[:-1], "I-ORG"]}))
    with pytest.raises(XlingError, match=r"^ner-up tags .*I-ORG; ner-en tags .*: an ensemble averages task adapters"):
        load(workspace, model_dir, "ner-en", "ner-up")
    twice = run_xling("evaluate", "ner", dev, "-t", "ner-en", "--ensemble", "ner-en", *where)
    assert twice.returncode != 0 and "--ensemble names a task adapter twice" in twice.stderr


def test_a_saved_spacy_pipeline_keeps_its_ensemble(copied_workspace, tmp_path):
    spacy = pytest.importorskip("spacy")
    workspace, model_dir, _, _ = copied_workspace
    shifted(workspace, model_dir, "ner-up", 0.05)
    nlp = spacy.blank("xx")
    config = {"lang": "qu", "task_adapter": "ner-en", "ensemble": ["ner-up"], "model": str(model_dir)}
    nlp.add_pipe("xling_ner", config=config | {"workspace": str(workspace)})
    texts = [" ".join(sentence) for sentence in SENTENCES]
    before = [[(e.start_char, e.end_char, e.label_) for e in doc.ents] for doc in nlp.pipe(texts)]
    nlp.to_disk(tmp_path / "saved")
    shutil.rmtree(workspace)  # the saved pipeline carries its own copies
    loaded = spacy.load(tmp_path / "saved")
    assert [[(e.start_char, e.end_char, e.label_) for e in doc.ents] for doc in loaded.pipe(texts)] == before
    assert loaded.get_pipe("xling_ner").tagger.head == "ner-en+ner-up"


def test_a_recipe_step_needs_every_adapter_of_its_ensemble(tmp_path, trained_workspace):
    from tests.test_recipes import english_step, write_recipe

    _, model_dir, train, dev = trained_workspace
    steps = (
        english_step(train, dev)
        + f'''
[[step]]
title = "dev"
run = "evaluate"
data = "{dev}"
lang = "en"
task_adapter = "ner-en"
ensemble = ["ner-missing"]
no_lang_adapter = true
'''
    )
    recipe = write_recipe(tmp_path / "ensemble.toml", model_dir, tmp_path / "ws", steps)
    result = run_xling("run", recipe, "--dry-run", env={"COLUMNS": "300"})
    assert result.returncode == 1 and "ner-missing" in result.stderr and "step 2" in result.stderr


def test_an_ensemble_runs_on_onnx_runtime_as_on_torch(copied_workspace):
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    workspace, model_dir, _, _ = copied_workspace
    shifted(workspace, model_dir, "ner-up", 0.05)
    spec = TaggerSpec(
        lang="qu", task_adapter="ner-en", ensemble=["ner-up"], model=str(model_dir), workspace=str(workspace)
    )
    on_torch = Tagger.load(spec, precision="fp32").word_probabilities(SENTENCES)
    on_onnx = Tagger.load(spec, runtime="onnx", precision="fp32")
    assert on_onnx.runtime == "onnx" and on_onnx.head == "ner-en+ner-up"
    assert all(np.allclose(a, b, atol=1e-4) for a, b in zip(on_onnx.word_probabilities(SENTENCES), on_torch))
