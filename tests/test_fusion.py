"""AdapterFusion training and reload, and the analyses (fusion attention, layer ablation, confidence, parameters)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.tiny import run_xling
from xling.adapters import Fuse, Stack
from xling.analysis.ablation import layer_ablation
from xling.analysis.confidence import count_by_confidence
from xling.analysis.fusion import fusion_attention
from xling.analysis.params import parameter_table
from xling.data.conll import Sentence, read_conll
from xling.errors import XlingError
from xling.tagging.evaluate import EvaluationOptions, evaluate
from xling.tagging.spec import TaggerSpec
from xling.tagging.tagger import Tagger
from xling.train.config import FusionOptions, TaskAdapterOptions, TrainConfig
from xling.train.fusion import train_fusion
from xling.train.report import RunReport
from xling.train.task import train_task_adapter
from xling.workspace import Workspace


@pytest.fixture(scope="module")
def fused(trained_workspace):
    root, model_dir, train, dev = trained_workspace
    ws = str(root / "ws")
    if not (root / "ws" / "tinybert" / "task" / "ner-es").exists():
        train_task_adapter(
            TaskAdapterOptions(
                lang="en",
                name="ner-es",
                train=str(train),
                dev=str(dev),
                model=str(model_dir),
                workspace=ws,
                training=TrainConfig(epochs=2, batch_size=16, learning_rate=5e-3, eval_every=None, seed=3),
            )
        )
    report = train_fusion(
        FusionOptions(
            lang="qu",
            adapters=["ner-en", "ner-es"],
            train=str(dev),
            dev=str(dev),
            model=str(model_dir),
            workspace=ws,
            training=TrainConfig(epochs=3, batch_size=8, learning_rate=5e-3, eval_every=None, patience=3),
            overwrite=True,
        )
    )
    return report, root, model_dir, dev


def test_fusion_is_trained_over_frozen_adapters_and_reloads_exactly(fused):
    report, root, model_dir, dev = fused
    assert report.name == "ner-fusion-qu" and report.adapters == ["ner-en", "ner-es"]
    saved = json.loads((root / "ws" / "tinybert" / "fusion" / "ner-fusion-qu" / "xling_adapter.json").read_text())
    assert saved["kind"] == "fusion" and saved["adapters"] == ["ner-en", "ner-es"]
    read = RunReport.read(root / "ws" / "tinybert" / "fusion" / "ner-fusion-qu")  # the options as the run's own
    assert read.options.adapters == ["ner-en", "ner-es"] and read.options.training.epochs == 3
    assert (
        Path(read.resolved.lang_adapter).name == "qu" and read.to_record() == replace(report, saved_to=None).to_record()
    )
    result = evaluate(
        EvaluationOptions(
            data=str(dev),
            tagger=TaggerSpec(lang="qu", fusion="ner-fusion-qu", model=str(model_dir), workspace=str(root / "ws")),
        )
    )
    assert result.setup == str(Stack("lang-qu", Fuse("ner-en", "ner-es"))) == "Stack(qu, Fuse(ner-en, ner-es))"
    assert result.f1 == report.best.f1  # exactly the dev F1 it was selected with


def test_tag_command_accepts_a_fusion(fused):
    _, root, model_dir, dev = fused
    source = root / "fusion-input.txt"
    source.write_text("juan lima the city\n")
    result = run_xling(
        "tag",
        str(source),
        "--lang",
        "qu",
        "--fusion",
        "ner-fusion-qu",
        "--model",
        str(model_dir),
        "-w",
        str(root / "ws"),
        "-f",
        "jsonl",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["text"] == "juan lima the city"


def test_fusion_needs_task_adapters(trained_workspace):
    root, model_dir, train, dev = trained_workspace
    with pytest.raises(XlingError, match="at least two"):
        train_fusion(
            FusionOptions(
                lang="qu",
                adapters=["ner-en"],
                train=str(dev),
                dev=str(dev),
                model=str(model_dir),
                workspace=str(root / "ws"),
            )
        )
    with pytest.raises(XlingError, match="no task adapter 'ner-zz'"):
        train_fusion(
            FusionOptions(
                lang="qu",
                adapters=["ner-en", "ner-zz"],
                train=str(dev),
                dev=str(dev),
                name="other",
                model=str(model_dir),
                workspace=str(root / "ws"),
            )
        )


def test_fusion_attention_averages_sum_to_one(fused):
    _, root, model_dir, dev = fused
    tagger = Tagger.load(lang="qu", fusion="ner-fusion-qu", model=str(model_dir), workspace=str(root / "ws"))
    result = fusion_attention(tagger, str(dev))
    assert result.adapters == ["ner-en", "ner-es"] and result.layers == ["0_ffn", "1_ffn", "2_ffn"]
    assert result.tokens > 100
    assert all(abs(sum(row) - 1) < 1e-6 for row in result.attention)


def test_layer_ablation_reuses_one_model(trained_workspace, monkeypatch):
    root, model_dir, _, dev = trained_workspace
    tagger = Tagger.load(lang="en", model=str(model_dir), workspace=str(root / "ws"))
    import xling.trained_tasks

    monkeypatch.setattr(xling.trained_tasks, "load_model", lambda *a, **k: pytest.fail("the model was reloaded"))
    spans = []
    before = evaluate(EvaluationOptions(data=str(dev), limit=20, tagger=TaggerSpec(lang="en")), tagger=tagger)
    result = layer_ablation(tagger, str(dev), limit=20, on_span=lambda i, j: spans.append((i, j)))
    assert spans == [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]
    assert all(result.drop[i][j] is None for i in range(3) for j in range(i))
    assert all(result.drop[i][j] is not None for i in range(3) for j in range(i, 3))
    assert result.sentences == 20
    after = evaluate(EvaluationOptions(data=str(dev), limit=20, tagger=TaggerSpec(lang="en")), tagger=tagger)
    assert before.f1 > 0.5 and (after.f1, after.precision) == (before.f1, before.precision)


def test_without_layers_removes_exactly_those_adapters(trained_workspace):
    root, model_dir, _, _ = trained_workspace
    model = Tagger.load(lang="en", model=str(model_dir), workspace=str(root / "ws"), device="cpu").model
    ids = torch.tensor([[0, 5, 6, 7, 8, 2]])

    def hidden():
        with torch.no_grad():
            return model(input_ids=ids, attention_mask=torch.ones_like(ids))

    full = hidden()
    with model.without_layers([2]):
        without_last = hidden()
    with model.without_layers(range(3)):
        without_any = hidden()
    assert torch.equal(hidden(), full)  # back afterwards
    assert not torch.allclose(without_last, full) and not torch.allclose(without_any, without_last)


def test_confidence_counts_entities_right_only_with_their_exact_words_and_type():
    gold = [
        Sentence(["Ana", "Rosa", "Qusqupi", "Lima"], ["B-PER", "I-PER", "O", "B-LOC"]),
        Sentence(["Punu", "suyu", "kachkan"], ["B-LOC", "I-LOC", "O"]),
    ]
    tagged = [
        [("B-PER", 0.95), ("I-PER", 0.91), ("O", 0.62), ("B-ORG", 0.55)],  # right PER; wrong type
        [("B-LOC", 0.85), ("O", 0.31), ("O", 0.99)],  # cut short: wrong; its second word a missed entity's
    ]
    result = count_by_confidence(gold, tagged)
    assert result.bins[9] == 0.9 and len(result.o_words) == 10
    assert result.entities == {
        "LOC": [[0, 0]] * 8 + [[0, 1], [0, 0]],
        "ORG": [[0, 0]] * 5 + [[0, 1]] + [[0, 0]] * 4,
        "PER": [[0, 0]] * 9 + [[1, 1]],  # the least of its words' probabilities: 0.91
    }
    assert result.o_words[3] == [1, 1] and result.o_words[6] == [0, 1] and result.o_words[9] == [0, 1]
    assert sum(count for _, count in result.o_words) == 3


def test_errors_class_each_entity_once_and_name_the_words_a_wrong_span_leaves_out():
    from xling.analysis.errors import count_errors

    gold = [
        Sentence(["Ana", "Rosa", "Qusqupi", "Lima"], ["B-PER", "I-PER", "O", "B-LOC"]),
        Sentence(["Punu", "suyu", "kachkan", "Manu", "parki"], ["B-LOC", "I-LOC", "O", "B-ORG", "I-ORG"]),
        Sentence(["Juan", "rimarqan", "Inka"], ["B-PER", "O", "O"]),
    ]
    tagged = [
        ["B-PER", "I-PER", "O", "B-ORG"],  # right; wrong type
        ["B-LOC", "O", "O", "B-LOC", "O"],  # wrong span (suyu left out); wrong type and span
        ["O", "O", "B-LOC"],  # Juan missed; Inka spurious
    ]
    result = count_errors(gold, tagged)
    assert result.kinds == {
        "right": 1, "wrong type": 1, "wrong span": 1, "wrong type and span": 1, "spurious": 1, "missed": 1
    }  # fmt: skip
    assert result.left_out == [("suyu", 1)] and result.taken_in == []
    types = result.types
    assert types == ["LOC", "ORG", "PER", "none"]
    cell = {(g, p): result.confusion[types.index(g)][types.index(p)] for g in types for p in types}
    assert cell["LOC", "ORG"] == 1 and cell["ORG", "LOC"] == 1 and cell["LOC", "LOC"] == 1
    assert cell["PER", "PER"] == 1 and cell["PER", "none"] == 1 and cell["none", "LOC"] == 1
    assert sum(cell.values()) == 6
    assert result.examples["wrong span"] == ["tagged [Punu](LOC), gold [Punu suyu](LOC)"]


def test_parameter_table(fused):
    _, root, model_dir, _ = fused
    result = parameter_table(Workspace(str(root / "ws"), str(model_dir)), base_parameters=30_000)
    rows = {(r.kind, r.name): r for r in result.rows}
    assert rows[("lang", "qu")].head > 0 and rows[("lang", "qu")].used == rows[("lang", "qu")].adapter
    assert rows[("task", "ner-en")].used == rows[("task", "ner-en")].adapter + rows[("task", "ner-en")].head
    assert ("fusion", "ner-fusion-qu") in rows
    assert result.total_relative == pytest.approx(1 + sum(r.used for r in result.rows) / 30_000)


@pytest.mark.slow
def test_analysis_commands_write_readable_pngs(fused, tmp_path):
    _, root, model_dir, dev = fused
    common = ["--model", str(model_dir), "-w", str(root / "ws")]
    for args in (
        ["fusion", str(dev), "--fusion", "ner-fusion-qu", "--lang", "qu", "-o", str(tmp_path / "fusion.png")],
        ["ablation", str(dev), "--lang", "en", "--limit", "10", "-o", str(tmp_path / "ablation.png")],
        ["confidence", str(dev), "--lang", "en", "--limit", "30", "-o", str(tmp_path / "confidence.png")],
        ["errors", str(dev), "--lang", "en", "--limit", "30", "-o", str(tmp_path / "errors.png")],
    ):
        result = run_xling("analyze", *args, *common)
        assert result.returncode == 0, result.stderr
    for name in ("fusion", "ablation", "confidence", "errors"):
        png = (tmp_path / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
        assert json.loads((tmp_path / f"{name}.json").read_text())
    counted = json.loads((tmp_path / "confidence.json").read_text())
    words = sum(count for _, count in counted["o_words"])
    entities = sum(count for cells in counted["entities"].values() for _, count in cells)
    assert counted["sentences"] == 30 and words > 0 and entities > 0
    errors = json.loads((tmp_path / "errors.json").read_text())
    assert errors["sentences"] == 30 and sum(map(sum, errors["confusion"])) >= sum(errors["kinds"].values()) > 0
    params = run_xling("analyze", "params", "--json", *common)
    assert params.returncode == 0 and json.loads(params.stdout)["rows"]


def test_ablation_colours_diverge_about_zero():
    from xling.analysis.plots import colour_norm

    norm = colour_norm(np.array([[-5.0, 20.0], [np.nan, 0.0]]), center=0.0)
    assert norm(0.0) == 0.5 and norm(-5.0) < 0.5 < norm(20.0)  # F1 rising and falling get opposite colours
    assert norm(-20.0) == pytest.approx(1 - norm(20.0))  # equal changes, equally strong colours


@pytest.mark.slow
def test_a_fusion_exports_to_onnx_and_tags_as_in_pytorch(fused, tmp_path):
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    from xling.tagging.onnx_tagger import OnnxTagger

    _, root, model_dir, dev = fused
    where = ["--model", str(model_dir), "-w", str(root / "ws")]
    done = run_xling("export", "ner-fusion-qu", tmp_path / "fused", "--format", "onnx", "--lang", "qu", *where)
    assert done.returncode == 0, done.stderr
    graph = OnnxTagger(tmp_path / "fused")
    assert graph.setup == "Stack(qu, Fuse(ner-en, ner-es))"
    reference = Tagger.load("qu", fusion="ner-fusion-qu", model=str(model_dir), workspace=str(root / "ws"))
    sentences = [s.tokens for s in read_conll(dev)]
    assert [[t for t, _ in s] for s in graph.tag_words(sentences)] == [
        [t for t, _ in s] for s in reference.tag_words(sentences)
    ]


def test_a_spacy_pipeline_with_a_fusion_saves_and_loads_with_the_adapters_it_fuses(fused, tmp_path):
    spacy = pytest.importorskip("spacy")
    _, root, model_dir, _ = fused
    nlp = spacy.blank("xx")
    config = {"lang": "qu", "fusion": "ner-fusion-qu", "model": str(model_dir), "workspace": str(root / "ws")}
    nlp.add_pipe("xling_ner", config=config)
    text = "juan lima the city of qusqu maria of peru"
    before = [(e.start_char, e.end_char, e.label_, e._.score) for e in nlp(text).ents]
    nlp.to_disk(tmp_path / "saved")
    saved = tmp_path / "saved" / "xling_ner" / "workspace" / "tinybert"
    assert sorted(p.name for p in (saved / "task").iterdir()) == ["ner-en", "ner-es"]
    assert [p.name for p in (saved / "fusion").iterdir()] == ["ner-fusion-qu"]
    loaded = spacy.load(tmp_path / "saved")
    assert [(e.start_char, e.end_char, e.label_, e._.score) for e in loaded(text).ents] == before


@pytest.mark.slow
def test_a_fusion_tagged_by_onnx_runtime_without_a_language_adapter_is_exported_so(fused, tmp_path):
    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    import shutil

    _, root, model_dir, dev = fused
    ws = shutil.copytree(root / "ws", tmp_path / "ws")  # the export goes into a copy's cache
    where = {"fusion": "ner-fusion-qu", "use_lang_adapter": False, "model": str(model_dir), "workspace": str(ws)}
    graph = Tagger.load("qu", runtime="onnx", **where)
    assert graph.setup == "Fuse(ner-en, ner-es)"
    sentences = [s.tokens for s in read_conll(dev)]
    reference = Tagger.load("qu", **where)
    assert [[t for t, _ in s] for s in graph.tag_words(sentences)] == [
        [t for t, _ in s] for s in reference.tag_words(sentences)
    ]


def test_a_fusion_trained_without_a_language_adapter_is_tagged_without_one(fused, tmp_path):
    """As a task adapter: its record says what it was trained over, and no language adapter goes under a fusion
    trained alone; one named for it is refused."""
    import json
    import shutil

    _, root, model_dir, _ = fused
    ws = shutil.copytree(root / "ws", tmp_path / "ws")
    record = ws / "tinybert" / "fusion" / "ner-fusion-qu" / "xling_adapter.json"
    saved = json.loads(record.read_text())
    assert saved["metadata"]["over_lang_adapter"] is True  # trained over lang-qu
    where = {"fusion": "ner-fusion-qu", "model": str(model_dir), "workspace": str(ws)}
    assert Tagger.load("qu", **where).setup == Stack("lang-qu", Fuse("ner-en", "ner-es"))
    record.write_text(json.dumps(saved | {"metadata": saved["metadata"] | {"over_lang_adapter": False}}))
    assert Tagger.load("qu", **where).setup == Fuse("ner-en", "ner-es")
    with pytest.raises(XlingError, match="^fusion ner-fusion-qu was trained without a language adapter; tag with"):
        Tagger.load("qu", lang_adapter="qu", **where)
    del saved["metadata"]["over_lang_adapter"]  # saved before the record said: stacked, as it was then
    record.write_text(json.dumps(saved))
    assert Tagger.load("qu", **where).setup == Stack("lang-qu", Fuse("ner-en", "ner-es"))


def test_a_fusion_record_without_its_adapters_is_refused_naming_the_file(fused, tmp_path):
    import json
    import shutil

    _, root, model_dir, _ = fused
    ws = shutil.copytree(root / "ws", tmp_path / "ws")
    record = ws / "tinybert" / "fusion" / "ner-fusion-qu" / "xling_adapter.json"
    record.write_text(json.dumps({k: v for k, v in json.loads(record.read_text()).items() if k != "adapters"}))
    with pytest.raises(XlingError, match=r"xling_adapter.json: 'adapters' is missing or not a list"):
        Tagger.load("qu", fusion="ner-fusion-qu", model=str(model_dir), workspace=str(ws))
