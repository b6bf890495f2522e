"""Self-training: confident sentence selection, rounds, resuming, the command."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest

from tests.tiny import run_xling
from xling.adapters import Stack
from xling.data.conll import read_conll
from xling.errors import XlingError
from xling.tagging.tagger import Tagger
from xling.train.config import SelfTrainingOptions, TrainConfig
from xling.train.report import SelfTrainingReport
from xling.train.self_training import select_confident, self_train


def test_selection_keeps_confident_sentences_with_entities_most_confident_first():
    sentences = [["a", "Lima"], ["b"], ["Juan", "Lima"], ["Ana", "c"], ["Cusco"]]
    tagged = [
        [("O", 0.95), ("B-LOC", 0.92)],
        [("O", 0.99)],  # no entity: not kept
        [("B-PER", 0.97), ("B-LOC", 0.99)],
        [("B-PER", 0.99), ("O", 0.5)],  # one unsure word: not kept
        [("B-LOC", 0.91)],
    ]
    kept = select_confident(sentences, tagged, 0.9, None, confidence_of="words")
    assert [s.tokens for s in kept] == [["Juan", "Lima"], ["a", "Lima"], ["Cusco"]]
    assert kept[0].tags == ["B-PER", "B-LOC"]
    # At most one sentence per type: the most confident LOC sentence (also PER) fills both.
    assert [s.tokens for s in select_confident(sentences, tagged, 0.9, 1, "words")] == [["Juan", "Lima"]]
    assert select_confident(sentences, tagged, 0.999, None, "words") == []
    # Counting only the entities' words (the default), the sentence whose one unsure word is O is kept too.
    by_entities = select_confident(sentences, tagged, 0.9, None)
    assert [s.tokens for s in by_entities] == [["Ana", "c"], ["Juan", "Lima"], ["a", "Lima"], ["Cusco"]]


def test_options_are_checked_before_any_work():
    for bad, message in [
        ({"rounds": 0}, "rounds must be at least 1"),
        ({"threshold": 1.5}, "threshold must be between"),
        ({"max_sentences": -1}, "max-sentences must be at least 1"),
        ({"decoder": "x"}, "unknown decoder"),
        ({"confidence_of": "tokens"}, "confidence-of must be one of words, entities"),
    ]:
        with pytest.raises(XlingError, match=message):
            SelfTrainingOptions(lang="qu", corpus=["c"], dev="d", **bad)
    unlimited = SelfTrainingOptions(lang="qu", corpus=["c"], dev="d", max_sentences=0, max_per_type=0)
    assert (unlimited.max_sentences, unlimited.max_per_type) == (None, None)  # 0 on the command line: no limit


def test_self_training_rounds_resume_and_refuse_to_overwrite(tmp_path, trained_workspace):
    root, model_dir, train, dev = trained_workspace
    workspace = tmp_path / "ws"
    shutil.copytree(root / "ws", workspace)
    options = SelfTrainingOptions(
        lang="qu",
        corpus=[str(train)],
        dev=str(dev),
        model=str(model_dir),
        workspace=str(workspace),
        rounds=2,
        threshold=0.05,
        max_sentences=120,
        training=TrainConfig(epochs=1, batch_size=16, learning_rate=5e-3, eval_every=None),
    )
    report = self_train(options)
    tasks = workspace / "tinybert" / "task"
    assert [r.adapter for r in report.rounds] == ["ner-qu-self-round1", "ner-qu-self-round2"]
    assert [r.labelled_by for r in report.rounds] == ["ner-en", "ner-qu-self-round1"]
    assert report.sentences_tagged == 120
    for r in report.rounds:
        pseudo = read_conll(tasks / r.adapter / "pseudo_labels.conll")
        assert len(pseudo) == r.kept > 0 and all(any(t != "O" for t in s.tags) for s in pseudo)
        assert json.loads((tasks / r.adapter / "report.json").read_text())["options"]["init_from"] == "ner-en"
    # The result is the round best on dev, renamed, with the rounds' summary beside it.
    scores = [r.best.score for r in report.rounds]
    chosen = report.rounds[scores.index(max(scores))]
    assert report.chosen_round == chosen.round and report.chosen == chosen
    final = tasks / "ner-qu-self"
    assert SelfTrainingReport.read(final / "self_training.json") == report
    assert (final / "xling_adapter.safetensors").read_bytes() == (
        tasks / chosen.adapter / "xling_adapter.safetensors"
    ).read_bytes()
    for file in ("xling_adapter.json", "task.json", "report.json"):
        assert json.loads((final / file).read_text())["name"] == "ner-qu-self"
    assert 'task_adapter="ner-qu-self"' in (final / "README.md").read_text()
    tagger = Tagger.load(lang="qu", task_adapter="ner-qu-self", model=str(model_dir), workspace=str(workspace))
    assert tagger.setup == Stack("lang-qu", "ner-qu-self")
    with pytest.raises(XlingError, match="already exists.*--overwrite"):
        self_train(options)
    # An interrupted run (round 1 saved, the last round not) goes on where it stopped.
    round1 = (tasks / "ner-qu-self-round1" / "xling_adapter.json").stat().st_mtime_ns
    shutil.rmtree(final)
    shutil.rmtree(tasks / "ner-qu-self-round2")
    again = self_train(options)
    assert (tasks / "ner-qu-self-round1" / "xling_adapter.json").stat().st_mtime_ns == round1
    assert again.rounds[0] == report.rounds[0]


def test_labelled_data_of_the_language_and_of_others_join_every_rounds_pseudo_labels(tmp_path, trained_workspace):
    root, model_dir, train, dev = trained_workspace
    workspace = tmp_path / "ws"
    shutil.copytree(root / "ws", workspace)
    gold = tmp_path / "gold.conll"
    gold.write_text("".join(f"qu:Lima{i}\tB-LOC\nqu:llaqta\tO\n\n" for i in range(7)))
    options = SelfTrainingOptions(
        lang="qu",
        corpus=[str(train)],
        dev=str(dev),
        labelled=[str(gold)],
        also_train=[f"en={train}"],  # English sentences through the English adapter
        model=str(model_dir),
        workspace=str(workspace),
        name="ner-qu-semi",
        rounds=1,
        threshold=0.05,
        max_sentences=60,
        training=TrainConfig(epochs=1, batch_size=16, learning_rate=5e-3, eval_every=None),
    )
    with pytest.raises(XlingError, match="missing.conll"):  # before any tagging or training
        self_train(replace(options, labelled=[str(gold), str(tmp_path / "missing.conll")]))
    with pytest.raises(XlingError, match="xling train-lang de CORPUS"):
        self_train(replace(options, also_train=[f"de={train}"]))
    assert not (workspace / "tinybert" / "task" / "ner-qu-semi").exists()
    report = self_train(options)
    (only,) = report.rounds
    assert only.kept > 0 and only.trained_on == only.kept + 7
    saved = workspace / "tinybert" / "task" / "ner-qu-semi"
    trained = json.loads((saved / "report.json").read_text())
    assert trained["options"]["train"][1:] == [str(gold)] and trained["also_train_sentences"] == {"en": 200}
    assert json.loads((saved / "self_training.json").read_text())["labelled"] == [str(gold)]


def test_self_train_command_fails_in_one_line_on_a_missing_source(tmp_path, trained_workspace):
    root, model_dir, train, dev = trained_workspace
    run = run_xling(
        "self-train",
        "ner",
        str(train),
        "--lang",
        "qu",
        "--from",
        "ner-xx",
        "--dev",
        str(dev),
        "-m",
        str(model_dir),
        "-w",
        str(root / "ws"),
    )
    assert run.returncode == 1
    assert run.stderr.startswith("error: no task adapter 'ner-xx'") and len(run.stderr.strip().splitlines()) == 1
