"""`xling soup`: task adapters trained alike averaged weight by weight into one, on the command line and in recipes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from tests.test_recipes import english_step, write_recipe
from tests.tiny import run_xling
from xling.adapters.files import HEAD_WEIGHTS_FILE, WEIGHTS_FILE
from xling.adapters.weights import read_weights, write_weights
from xling.errors import XlingError
from xling.recipes.running import run_recipe
from xling.train.config import SoupOptions
from xling.train.soup import soup


def shifted(workspace: Path, model_dir: Path, name: str, by: float) -> Path:
    """A copy of the workspace's ner-en named `name`, every weight moved by `by`."""
    source = workspace / model_dir.name / "task" / "ner-en"
    target = source.with_name(name)
    shutil.copytree(source, target)
    for file in (WEIGHTS_FILE, HEAD_WEIGHTS_FILE):
        write_weights(target / file, {k: v + by for k, v in read_weights(source / file).items()})
    task = json.loads((target / "task.json").read_text())
    (target / "task.json").write_text(json.dumps(task | {"name": name}))
    return target


def test_a_soup_is_the_mean_of_its_adapters_and_tags_as_that_mean(copied_workspace):
    from xling.tagging.spec import TaggerSpec
    from xling.tagging.tagger import Tagger

    workspace, model_dir, model_ws, dev = copied_workspace
    shifted(workspace, model_dir, "ner-up", 0.25)
    shifted(workspace, model_dir, "ner-down", -0.25)
    done = run_xling("soup", "--adapters", "ner-up,ner-down", "--name", "ner-soup", "-m", model_dir, "-w", workspace)
    assert done.returncode == 0, done.stderr

    made, original = model_ws / "task" / "ner-soup", model_ws / "task" / "ner-en"
    for file in (WEIGHTS_FILE, HEAD_WEIGHTS_FILE):
        mean, expected = read_weights(made / file), read_weights(original / file)
        assert mean.keys() == expected.keys()
        assert all(torch.allclose(mean[k], expected[k], atol=1e-6) for k in mean)
    assert json.loads((made / "task.json").read_text())["name"] == "ner-soup"
    record = json.loads((made / "soup.json").read_text())
    assert [Path(p).name for p in record["adapters"]] == ["ner-up", "ner-down"] and len(record["weights_sha256"]) == 2
    assert (made / "fingerprints.json").read_text() == (original / "fingerprints.json").read_text()
    words = [line.split()[0].split(":")[-1] for line in dev.read_text().splitlines()[:40] if line.strip()]

    def tags(task):
        spec = TaggerSpec(lang="en", task_adapter=task, model=str(model_dir), workspace=str(workspace))
        return [tag for tag, _ in Tagger.load(spec).tag_words([words])[0]]

    assert tags("ner-soup") == tags("ner-en") != tags("ner-up")
    again = run_xling("soup", "--adapters", "ner-up,ner-down", "--name", "ner-soup", "-m", model_dir, "-w", workspace)
    assert again.returncode == 1 and "already exists (use --overwrite to replace it)" in again.stderr


def test_adapters_not_trained_alike_are_refused_in_one_line(copied_workspace):
    workspace, model_dir, model_ws, _ = copied_workspace
    other = shifted(workspace, model_dir, "ner-other", 0.1)
    task = json.loads((other / "task.json").read_text())
    (other / "task.json").write_text(json.dumps(task | {"decoder": "split"}))
    options = SoupOptions(
        adapters=["ner-en", "ner-other"], name="ner-soup", model=str(model_dir), workspace=str(workspace)
    )
    with pytest.raises(
        XlingError, match=r"ner-other differs from .*ner-en in its task's decoder \('split', not 'viterbi'\)"
    ):
        soup(options)
    assert not (model_ws / "task" / "ner-soup").exists()
    one = run_xling("soup", "--adapters", "ner-en,ner-en", "--name", "ner-soup", "-m", model_dir, "-w", workspace)
    assert one.returncode != 0 and one.stderr.strip().splitlines()[-1].endswith(
        "a soup averages two task adapters or more, not ner-en, ner-en"
    )


def test_a_recipe_soups_the_adapters_its_steps_trained_and_scores_the_soup(tmp_path, trained_workspace):
    _, model_dir, train, dev = trained_workspace
    seeds = "".join(
        english_step(train, dev).replace('title = "ner-en"', f'title = "ner-en-{s}"\nname = "ner-en-{s}"\nseed = {s}')
        for s in (1, 2)
    )
    steps = (
        seeds
        + f'''
[[step]]
title = "soup"
run = "soup"
adapters = ["ner-en-1", "ner-en-2"]
name = "ner-en-soup"

[[step]]
title = "dev"
run = "evaluate"
data = "{dev}"
lang = "en"
task_adapter = "ner-en-soup"
no_lang_adapter = true
label = "soup"
'''
    )
    recipe = write_recipe(tmp_path / "soup.toml", model_dir, tmp_path / "ws", steps)
    statuses: list[str] = []
    results = run_recipe(recipe, on_step=lambda step, status: statuses.append(status))
    assert statuses == ["ran"] * 4 and results[0].setup == "ner-en-soup"
    assert (tmp_path / "ws" / model_dir.name / "task" / "ner-en-soup" / "soup.json").is_file()
    statuses.clear()
    run_recipe(recipe, on_step=lambda step, status: statuses.append(status))
    assert statuses == ["skipped"] * 4
