"""ONNX export and the ONNX Runtime tagger: the graph agrees with PyTorch, `xling tag --runtime onnx` gives the
same entities, the workspace caches the export, and errors are one line."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.tiny import run_xling

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")

SENTENCES = "juan lima the city\nmaria of peru . runa wasi qusqu\n\nqusqu llaqta , peru suyu\n"


def where(trained_workspace) -> list[str]:
    root, model_dir, _, _ = trained_workspace
    return ["--model", str(model_dir), "-w", str(root / "ws")]


def entities(stdout: str) -> list[list[tuple]]:
    return [
        [(e["start"], e["end"], e["entity_group"]) for e in json.loads(line)["entities"]]
        for line in stdout.splitlines()
    ]


@pytest.mark.slow
def test_a_task_adapter_given_as_a_directory_exports(trained_workspace, tmp_path):
    root, model_dir, _, _ = trained_workspace
    task = root / "ws" / model_dir.name / "task" / "ner-en"
    done = run_xling(
        "export", task, tmp_path / "from-dir", "--format", "onnx", "--lang", "qu", *where(trained_workspace)
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "from-dir" / "xling_onnx.json").read_text())["head"] == "ner-en"


def test_export_checks_the_graphs_against_pytorch(exported):
    config = json.loads((exported / "xling_onnx.json").read_text())
    assert sorted(p.name for p in exported.glob("*.onnx")) == ["model.int8.onnx", "model.onnx"]
    assert config["checks"]["fp32_max_logit_difference"] <= 1e-4
    assert 0.5 <= config["checks"]["int8_tag_agreement"] <= 1.0
    assert config["setup"] == "Stack(qu, ner-en)" and config["labels"][0] == "O"
    assert json.loads((exported / "config.json").read_text())["id2label"]["0"] == "O"


@pytest.mark.slow
def test_every_family_exports_with_its_padding_hidden(tiny_model_dir, tmp_path):
    """The export's check runs padded batches, so each family's graph must mask padding as PyTorch does; the
    families with SDPA export one `Attention` operator per layer (DeBERTa exports its own attention)."""
    import onnx

    from tests.tiny import random_madx_adapters
    from xling.adapters import AdaptedModel, Stack
    from xling.models import load_model
    from xling.tagging.onnx_export import export_onnx
    from xling.tagging.tagger import Tagger

    encoder, tokenizer = load_model(str(tiny_model_dir))
    model = AdaptedModel(encoder)
    random_madx_adapters(model, tmp_path)
    model.set_active(Stack("qu", "ner"))
    tagger = Tagger(model, tokenizer, "ner", model.active, precision="fp32")
    sentences = [["juan", "lima", "the", "city", "of", "peru", "runa", "wasi"], ["maria"], ["qusqu", "of", "lima"]]
    config = export_onnx(tagger, tmp_path / "onnx", check=(sentences, None))
    assert config.checks.fp32_max_logit_difference <= 1e-4
    operators = [node.op_type for node in onnx.load(str(tmp_path / "onnx" / "model.onnx")).graph.node]
    assert operators.count("Attention") == (0 if encoder.config.model_type == "deberta-v2" else 3)


def test_int8_keeps_fp32_the_down_projection_with_massive_inputs(tmp_path):
    """A layer whose FFN input is a thousand times its peers' keeps its down-projection fp32 in the int8 graph,
    named in `xling_onnx.json`; the others are quantised, with 7-bit weights."""
    import onnx
    import torch

    from tests.tiny import random_madx_adapters, save_tiny_model
    from xling.adapters import AdaptedModel, Stack
    from xling.models import load_model
    from xling.tagging.onnx_export import down_projections, export_onnx
    from xling.tagging.tagger import Tagger

    encoder, tokenizer = load_model(str(save_tiny_model("bert", tmp_path / "bert")))
    with torch.no_grad():
        encoder.encoder.layer[1].intermediate.dense.weight.mul_(1000)
    model = AdaptedModel(encoder)
    random_madx_adapters(model, tmp_path)
    model.set_active(Stack("qu", "ner"))
    tagger = Tagger(model, tokenizer, "ner", model.active, precision="fp32")
    config = export_onnx(tagger, tmp_path / "onnx", int8=True, check=([["juan", "lima"], ["runa", "wasi"]], None))
    fp32 = onnx.load(str(tmp_path / "onnx" / "model.onnx")).graph
    assert config.int8_fp32_nodes == [down_projections(fp32, encoder.config.hidden_size)[1].name]
    int8 = {node.name: node.op_type for node in onnx.load(str(tmp_path / "onnx" / "model.int8.onnx")).graph.node}
    assert int8[config.int8_fp32_nodes[0]] == "MatMul"
    assert sum(op == "MatMulInteger" for op in int8.values()) >= 2  # the other layers' matrix multiplies
    quantised = onnx.load(str(tmp_path / "onnx" / "model.int8.onnx")).graph
    weights = {w.name: onnx.numpy_helper.to_array(w) for w in quantised.initializer}
    for node in quantised.node:
        if node.op_type == "MatMulInteger":  # 7-bit weights: no 16-bit overflow on CPUs without VNNI
            assert np.abs(weights[node.input[1]].astype(int)).max() <= 64


@pytest.mark.slow
def test_onnx_tag_gives_the_entities_of_pytorch(exported, trained_workspace, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text(SENTENCES * 20, encoding="utf-8")
    torch_run = run_xling("tag", str(source), "--lang", "qu", "-f", "jsonl", *where(trained_workspace))
    onnx_run = run_xling("tag", str(source), "--lang", "qu", "-f", "jsonl", "--runtime", "onnx", "-t", str(exported))
    assert torch_run.returncode == 0 and onnx_run.returncode == 0, onnx_run.stderr
    assert entities(onnx_run.stdout) == entities(torch_run.stdout)
    assert any(entities(torch_run.stdout))  # the comparison compares something


def test_a_cpu_session_keeps_the_residual_add_apart_from_layer_norm(exported, tmp_path):
    """ONNX Runtime fuses each residual Add and LayerNorm into a SkipLayerNormalization, slower on CPUs:
    xling's CPU session leaves them apart; a default session on the same graph fuses them."""
    import onnx
    import onnxruntime

    from xling.tagging.onnx_tagger import session_for

    def optimised_ops(make_session, name: str) -> set[str]:
        options = onnxruntime.SessionOptions()
        options.optimized_model_filepath = str(tmp_path / name)
        make_session(options)
        return {node.op_type for node in onnx.load(tmp_path / name).graph.node}

    graph = exported / "model.onnx"
    default = optimised_ops(lambda o: onnxruntime.InferenceSession(graph, o, providers=["CPUExecutionProvider"]), "a")
    xlings = optimised_ops(lambda o: session_for(graph, "cpu", o), "b")
    assert "SkipLayerNormalization" in default
    assert "SkipLayerNormalization" not in xlings and "LayerNormalization" in xlings


def test_onnx_tagger_loads_an_exported_folder_alone(exported, tmp_path):
    import shutil

    from xling.tagging.onnx_tagger import OnnxTagger

    moved = shutil.copytree(exported, tmp_path / "elsewhere")  # no workspace, no adapters beside it
    tagger = OnnxTagger(moved, precision="int8")
    assert [t.text for t in tagger.tag_texts(["juan lima", "runa wasi"])] == ["juan lima", "runa wasi"]
    assert (
        tagger.computed_in == "int8" and tagger.labels == json.loads((moved / "xling_onnx.json").read_text())["labels"]
    )


@pytest.mark.slow
def test_tagger_load_exports_once_into_the_workspace(copied_workspace, exported, tmp_path, monkeypatch):
    """... and a bare name means the workspace's adapter, even beside an exported folder of that name."""
    import shutil

    from xling import Tagger

    workspace, model_dir, model_folder, dev = copied_workspace
    decoy = shutil.copytree(exported, tmp_path / "ner-en")  # relabelled: PER becomes XXX
    config = json.loads((decoy / "xling_onnx.json").read_text())
    (decoy / "xling_onnx.json").write_text(
        json.dumps(config | {"labels": [x.replace("PER", "XXX") for x in config["labels"]]})
    )
    monkeypatch.chdir(tmp_path)
    options = {"lang": "qu", "task_adapter": "ner-en", "model": str(model_dir), "workspace": str(workspace)}
    assert "B-XXX" in Tagger.load(**options | {"task_adapter": "./ner-en"}, runtime="onnx").labels  # a path: the folder
    first = Tagger.load(**options, runtime="onnx")
    assert "B-XXX" not in first.labels
    second = Tagger.load(**options, runtime="onnx", precision="int8")
    assert first.directory == second.directory and second.computed_in == "int8"
    assert [p.name for p in (model_folder / "onnx").iterdir()] == [first.directory.name]
    reference = Tagger.load(**options)
    texts = ["juan lima the city", "maria of peru"]
    assert [s.spans for s in first.tag_texts(texts)] != [] and [
        [(x.start, x.end, x.label) for x in s.spans] for s in first.tag_texts(texts)
    ] == [[(x.start, x.end, x.label) for x in s.spans] for s in reference.tag_texts(texts)]
    (model_folder / "task" / "ner-en" / "xling_adapter.json").touch()  # as retraining would rewrite it
    third = Tagger.load(**options, runtime="onnx")
    assert third.directory != first.directory  # a changed adapter is exported again


@pytest.mark.slow
def test_onnx_evaluation_scores_as_pytorch(exported, trained_workspace):
    _, _, _, dev = trained_workspace
    scores = {}
    for runtime in ("torch", "onnx"):
        extra = ["--runtime", "onnx", "-t", str(exported)] if runtime == "onnx" else []
        done = run_xling("evaluate", "ner", str(dev), "--lang", "qu", "--json", *extra, *where(trained_workspace))
        assert done.returncode == 0, done.stderr
        scores[runtime] = json.loads(done.stdout)
    assert scores["onnx"]["runtime"] == "onnx" and scores["onnx"]["f1"] == pytest.approx(scores["torch"]["f1"])


@pytest.mark.parametrize(
    "arguments, expected",
    [
        (["tag", "x.txt", "--lang", "qu", "--runtime", "onnx", "--precision", "bf16"], "computes in fp32 or int8"),
        (["tag", "x.txt", "--lang", "qu", "--runtime", "tensorrt"], "runtime must be one of torch, onnx"),
        (["export", "ner-en", "out", "--format", "adapterhub", "--int8"], "--int8 is an option of --format onnx only"),
        (["export", "ner-en", "out", "--format", "onnx"], "--format onnx needs --lang"),
    ],
)
def test_bad_onnx_options_are_one_line_errors(arguments, expected, tmp_path):
    (tmp_path / "x.txt").write_text("juan\n")
    done = run_xling(*arguments, cwd=tmp_path)
    assert done.returncode != 0 and expected in done.stderr and "Traceback" not in done.stderr


def test_without_onnxruntime_one_line_says_how_to_install_it(monkeypatch):
    from xling.errors import XlingError
    from xling.tagging.onnx_tagger import import_onnxruntime

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(XlingError, match=r"pip install 'xling\[onnx\]'"):
        import_onnxruntime()


def test_an_onnxruntime_too_old_for_the_graphs_is_a_one_line_error(monkeypatch):
    from types import SimpleNamespace

    from xling.errors import XlingError
    from xling.tagging.onnx_tagger import import_onnxruntime

    monkeypatch.setitem(sys.modules, "onnxruntime", SimpleNamespace(__version__="1.22.1"))
    with pytest.raises(XlingError, match=r"ONNX Runtime 1.22.1 .* 1.23 or later.*pip install -U 'xling\[onnx\]'"):
        import_onnxruntime()


def test_onnx_runtime_writes_nothing_outside_xling_home(exported, tmp_path):
    """ONNX Runtime's import writes its telemetry device id under ~/.cache: xling points it into XLING_HOME."""
    import os
    import subprocess

    home, xling_home = tmp_path / "home", tmp_path / "xling-home"
    home.mkdir()
    script = (
        "from xling.tagging.onnx_tagger import OnnxTagger; OnnxTagger(__import__('sys').argv[1]).tag_texts(['juan'])"
    )
    # ONNX Runtime writes nothing when CI is set: without it, as on a user's machine
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "CI")} | {
        "HOME": str(home),
        "XLING_HOME": str(xling_home),
    }
    done = subprocess.run([sys.executable, "-c", script, str(exported)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert list(home.rglob("*")) == []
    assert (xling_home / "onnxruntime").is_dir()  # where its import wrote instead


@pytest.mark.slow
def test_an_export_never_replaces_a_folder_it_did_not_write(exported, trained_workspace, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    for extra in ([], ["--overwrite"]):
        done = run_xling(
            "export",
            "ner-en",
            str(tmp_path / "mine"),
            "--format",
            "onnx",
            "--lang",
            "qu",
            *extra,
            *where(trained_workspace),
        )
        assert done.returncode != 0 and (tmp_path / "mine" / "notes.txt").read_text() == "keep"


@pytest.mark.slow
def test_the_embedded_model_exports_from_its_light_encoder_and_tags_as_pytorch(tmp_path):
    """The embedded default loads as the light encoder (`models/light/`), never Transformers' BERT: its graph
    is written from that path, and ONNX Runtime then tags as PyTorch does."""
    line = "Qusqu llaqtaqa Perú suyupi kachkan.\n"
    done = run_xling("export", "ner-qu", tmp_path / "onnx", "--format", "onnx", "--lang", "qu", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    checks = json.loads((tmp_path / "onnx" / "xling_onnx.json").read_text())["checks"]
    assert checks["fp32_max_logit_difference"] < 1e-3
    onnx = run_xling("tag", "--lang", "qu", "-t", tmp_path / "onnx", "--runtime", "onnx", "-", input=line, cwd=tmp_path)
    assert onnx.returncode == 0 and onnx.stdout == "[Qusqu llaqtaqa](LOC) [Perú suyupi](LOC) kachkan.\n"  # as torch


def test_an_exported_folder_tags_without_importing_torch_or_transformers(exported):
    """`pip install ".[onnx]"` and an exported folder: one line tagged by ONNX Runtime through the `tokenizers`
    library alone (the folder's `tokenizer.json`), neither torch nor Transformers imported."""
    script = (
        "import sys\n"
        "from xling.cli import main\n"
        f"sys.argv = ['xling', 'tag', '--runtime', 'onnx', '-t', {str(exported)!r}, '--lang', 'qu', '-f', 'jsonl', '-']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers'})\n"
        "print('imported:', loaded, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], input="juan lima the city\n", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["text"] == "juan lima the city"
    assert "imported: []" in done.stderr, done.stderr
