"""The adapters shipped with xling: they tag with a fresh XLING_HOME and an empty workspace, a workspace's own
adapter of the same name wins, their files are those their records and cards name, and what the records say
of them (fp16 tags, F1 on silver-dev, the sentences they were trained on) holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from tests.tiny import run_xling
from xling import Tagger
from xling.data.fingerprints import read_fingerprints
from xling.errors import XlingError
from xling.models.embedded import EMBEDDED_NAME
from xling.pretrained import PRETRAINED_ROOT, PretrainedRecord, check_shipped_files
from xling.roles import LANG, TASK, AdapterFolders
from xling.tagging.evaluate import evaluate
from xling.tagging.options import EvaluationOptions
from xling.tagging.spec import TaggerSpec
from xling.train.cards.common import CARD_FILE
from xling.workspace import Workspace

SHIPPED = {"lang/qu", "lang/en", "task/ner-en", "task/ner-qu"}
HEAD = "head/mlm"  # the masked-LM head language adapters train under (`python -m xling.shipping.head`)
LINE = "Qusqu llaqtaqa Perú suyupi kachkan."


def shipped(role_name: str):
    return PRETRAINED_ROOT / EMBEDDED_NAME / role_name


def test_the_four_adapters_and_the_head_are_shipped_within_15_mb_with_the_files_their_records_and_cards_name(tmp_path):
    found = Workspace(tmp_path / "empty", "e5-small").shipped()
    assert {f"{role}/{name}": directory for role, name, directory in found} == {
        name: shipped(name) for name in SHIPPED | {HEAD}
    }
    total = sum(f.stat().st_size for f in (PRETRAINED_ROOT / EMBEDDED_NAME).rglob("*") if f.is_file())
    assert total <= 15e6
    for name in SHIPPED | {HEAD}:
        check_shipped_files(shipped(name))
        record, card = PretrainedRecord.read(shipped(name)), (shipped(name) / CARD_FILE).read_text()
        assert all(digest in card for digest in record.files.values())
        assert record.data and all(d.source and d.licence for d in record.data)
        assert not (shipped(name) / "head_config.json").is_file() or name.startswith("task/")  # no masked-LM head


def test_the_shipped_mlm_head_is_the_one_a_language_adapter_of_the_embedded_model_trains_under(embedded):
    from rich.console import Console

    from xling.adapters import AdaptedModel
    from xling.adapters.weights import read_weights
    from xling.pretrained import MLM_HEAD_FILE
    from xling.train.language import mlm_head

    encoder, _ = embedded
    head = mlm_head(AdaptedModel(encoder), "e5-small", "pretrained", Console(quiet=True))
    shipped_weights = read_weights(shipped(HEAD) / MLM_HEAD_FILE)
    assert head.config.from_checkpoint and head.bias.numel() == encoder.get_input_embeddings().num_embeddings
    assert all(torch.equal(tensor, shipped_weights[name].float()) for name, tensor in head.state_dict().items())
    assert set(PretrainedRecord.read(shipped(HEAD)).perplexity) == {"qu", "es", "en"}


def test_a_changed_shipped_file_is_caught(tmp_path):
    copy = tmp_path / "ner-qu"
    shutil.copytree(shipped("task/ner-qu"), copy)
    (copy / "head_config.json").write_text((copy / "head_config.json").read_text() + " ")
    with pytest.raises(XlingError, match="not the file its pretrained.json names"):
        check_shipped_files(copy)


def test_a_shipped_weights_file_with_one_byte_changed_is_refused_at_load(tmp_path, monkeypatch):
    import xling.pretrained

    package = tmp_path / "pretrained"
    shutil.copytree(PRETRAINED_ROOT, package)
    weights = package / EMBEDDED_NAME / "task" / "ner-en" / "xling_adapter.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # the last byte of a weight: the file still reads
    weights.write_bytes(bytes(data))
    monkeypatch.setattr(xling.pretrained, "PRETRAINED_ROOT", package)
    with pytest.raises(XlingError, match="xling_adapter.safetensors is not the file its pretrained.json names"):
        Tagger.load("qu", task_adapter="ner-en", workspace=str(tmp_path / "empty"))


def test_a_task_adapter_given_as_a_language_adapter_is_refused_naming_its_file(tmp_path):
    done = run_xling("tag", "--lang", "qu", "--lang-adapter", shipped("task/ner-en"), "-", input=LINE, cwd=tmp_path)
    assert done.returncode == 1 and "unexpected" not in done.stderr
    assert "ner-en/xling_adapter.json is a task adapter, not a language adapter" in done.stderr


@pytest.mark.parametrize("key", ["auto_map", "trust_remote_code", "model_type"])
def test_an_adapter_config_with_keys_xling_does_not_write_is_refused_naming_the_file(tmp_path, key):
    import json

    workspace = Workspace(tmp_path / "ws", "e5-small")
    copy = workspace.adapter_dir(TASK, "ner-x")
    shutil.copytree(shipped("task/ner-en"), copy)
    (copy / "pretrained.json").unlink()  # a workspace's own copy
    config = json.loads((copy / "xling_adapter.json").read_text())
    (copy / "xling_adapter.json").write_text(json.dumps(config | {key: "x"}))
    with pytest.raises(XlingError, match=f"xling_adapter.json has keys xling does not write \\('{key}'\\)"):
        Tagger.load("qu", task_adapter="ner-x", workspace=str(tmp_path / "ws"))
    config["base_model"]["hidden_size"] = 384  # beside the base model's fingerprint
    (copy / "xling_adapter.json").write_text(json.dumps(config))
    with pytest.raises(XlingError, match="keys xling does not write \\('hidden_size'\\)"):
        Tagger.load("qu", task_adapter="ner-x", workspace=str(tmp_path / "ws"))


def test_fp16_is_shipped_only_where_its_tags_equal_fp32s_on_every_silver_dev_sentence():
    for name in SHIPPED:
        record = PretrainedRecord.read(shipped(name))
        agreed = all(c.equal == c.sentences > 0 for c in record.fp16_check)
        assert record.stored_in == ("fp16" if agreed else "fp32")
        weights = shipped(name) / "xling_adapter.safetensors"
        from safetensors import safe_open

        with safe_open(str(weights), "pt") as f:
            assert {str(f.get_tensor(k).dtype) for k in f.keys()} == {f"torch.float{record.stored_in[2:]}"}


def test_an_empty_workspace_tags_with_the_shipped_adapters_and_says_so(tmp_path, capsys):
    tagger = Tagger.load("qu", workspace=str(tmp_path / "empty"))
    assert tagger.directories == AdapterFolders(task=shipped("task/ner-qu"), lang=shipped("lang/qu"))
    spans = tagger(LINE)
    assert [(s.text, s.label) for s in spans][:1] == [("Qusqu llaqtaqa", "LOC")]  # QuBERT's spans hold "llaqta"
    told = capsys.readouterr().err.strip().splitlines()
    assert len(told) == 1 and "task/ner-qu" in told[0] and told[0].endswith("on 701 qubert-qu/dev sentences")
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    assert f"\n{told[0]}\n" in readme  # the README shows this very line, its figure too
    zero_shot = Tagger.load("qu", task_adapter="ner-en", workspace=str(tmp_path / "empty"))
    assert zero_shot.directories == AdapterFolders(task=shipped("task/ner-en"), lang=shipped("lang/qu"))
    assert "Stack(qu, ner-en) F1" in capsys.readouterr().err
    Tagger.load("qu", task_adapter="ner-en", use_lang_adapter=False, workspace=str(tmp_path / "empty"))
    alone = capsys.readouterr().err.strip()
    assert alone.endswith("(task/ner-en): no figure for ner-en") and "F1" not in alone


def test_a_workspace_adapter_of_the_same_name_wins(tmp_path):
    workspace = Workspace(tmp_path / "ws", "e5-small")
    shutil.copytree(shipped("task/ner-en"), workspace.adapter_dir(TASK, "ner-lora"))  # a stray experiment
    assert workspace.task_adapter_name("ner", "qu") == "ner-qu" and workspace.task_adapter_name("ner", "en") == "ner-en"
    assert workspace.find(TASK, workspace.task_adapter_name("ner", "qu")) == shipped("task/ner-qu")  # never the stray
    shutil.copytree(shipped("task/ner-en"), workspace.adapter_dir(TASK, "ner-en"))
    # the workspace's own ner-en comes before the shipped ner-qu
    assert workspace.task_adapter_name("ner", "qu") == "ner-en"
    assert workspace.roots == [workspace.model_dir, shipped("task").parent]  # own, then shipped: one list
    assert workspace.find(TASK, "ner-en") == workspace.adapter_dir(TASK, "ner-en")
    assert workspace.adapter("ner-qu") == workspace.find(TASK, "ner-qu") == shipped("task/ner-qu")
    for role, name in ((TASK, "ner-qu"), (LANG, "qu")):
        shutil.copytree(shipped(f"{role}/{name}"), workspace.adapter_dir(role, name))
    tagger = Tagger.load("qu", workspace=str(tmp_path / "ws"))
    assert tagger.directories == AdapterFolders(
        task=workspace.adapter_dir(TASK, "ner-qu"), lang=workspace.adapter_dir(LANG, "qu")
    )
    assert workspace.lang_adapter("en") == shipped("lang/en")  # a name it does not hold
    # under a shipped task adapter, the shipped language adapter it was trained over
    assert workspace.lang_adapter("qu", under=shipped("task/ner-en")) == shipped("lang/qu")


@pytest.mark.parametrize("lang", ["qu", "en"])
def test_the_default_task_adapter_is_chosen_by_name_and_the_notice_says_why(tmp_path, capsys, lang):
    where = {"workspace": str(tmp_path / "ws")}
    workspace, wanted = Workspace(tmp_path / "ws", "e5-small"), f"ner-{lang}"
    shutil.copytree(shipped("task/ner-en"), workspace.adapter_dir(TASK, "ner-lora"))  # a stray experiment
    assert Tagger.load(lang, **where).directories.task == shipped(f"task/{wanted}")  # never the stray
    told = capsys.readouterr().err
    assert told.startswith(f"xling: your workspace has no {wanted}: tagging with the adapters shipped with xling (")
    setup = f"Stack({lang}, {wanted})"  # the figure of the setup used: English dev's for en, qubert-qu/dev's for qu
    data = {"qu": "qubert-qu/dev", "en": "wikiann-en/dev"}[lang]
    assert f"): {setup} F1 " in told and told.strip().endswith(f" {data} sentences")
    shutil.copytree(shipped("task/ner-qu"), workspace.adapter_dir(TASK, wanted))  # one of its own
    assert Tagger.load(lang, **where).directories.task == workspace.adapter_dir(TASK, wanted)
    assert "your workspace has no" not in capsys.readouterr().err
    if lang == "qu":  # its own ner-en comes before a shipped ner-qu, and says so
        shutil.rmtree(workspace.adapter_dir(TASK, wanted))
        shutil.copytree(shipped("task/ner-en"), workspace.adapter_dir(TASK, "ner-en"))
        assert Tagger.load(lang, **where).directories.task == workspace.adapter_dir(TASK, "ner-en")
        told = capsys.readouterr().err.strip()
        assert told == (
            "xling: your workspace has no ner-qu: tagging with your ner-en (zero-shot transfer) and the adapters "
            "shipped with xling (lang/qu)"
        )  # no figure: the shipped ones were measured with the shipped ner-en


def test_a_task_adapter_trained_without_a_language_adapter_tags_without_one_and_says_so(tmp_path, capsys):
    workspace = Workspace(tmp_path / "ws", "e5-small")
    alone = workspace.adapter_dir(TASK, "ner-qu")
    shutil.copytree(shipped("task/ner-en"), alone)
    record = json.loads((alone / "task.json").read_text())
    (alone / "task.json").write_text(json.dumps(record | {"lang_adapter": None}))
    tagger = Tagger.load("qu", workspace=str(tmp_path / "ws"))
    assert tagger.directories == AdapterFolders(task=alone) and tagger.setup == record["name"]
    told = capsys.readouterr().err.strip()
    assert (
        told == "xling: ner-qu was trained without a language adapter, so none goes under it: tagging with your ner-qu"
    )


def test_no_adapter_for_a_language_names_the_workspace_the_shipped_ones_and_the_demos(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "xling-workspace" / "demo" / EMBEDDED_NAME).mkdir(parents=True)
    monkeypatch.delenv("XLING_HOME")
    with pytest.raises(XlingError) as raised:
        Tagger.load(TaggerSpec(lang="de", workspace=str(tmp_path / "mine")))
    message = str(raised.value)
    assert str(tmp_path / "mine") in message and "xling ships language adapters en, qu" in message
    assert "xling-workspace/demo" in message and "\n" not in message


def test_the_command_line_tags_right_after_install(tmp_path):
    done = run_xling("tag", "--lang", "qu", "-", input=LINE + "\n", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[Qusqu llaqtaqa](LOC)")
    assert "shipped with xling" in done.stderr
    listing = run_xling("models", "list", env={"COLUMNS": "200"})
    assert all(name in listing.stdout for name in SHIPPED)


def test_the_shipped_weights_score_what_their_records_say_and_flag_their_training_sentences(corpora_root, monkeypatch):
    monkeypatch.setenv("XLING_CORPORA", str(corpora_root))  # found beside the clone, not named in the environment
    record = PretrainedRecord.read(shipped("task/ner-qu"))
    held_out = record.headline()  # the held-out figure the notice gives
    spec = TaggerSpec(lang="qu", task_adapter="ner-qu", precision="fp32")  # as the record was computed
    result = evaluate(EvaluationOptions(data=held_out.data, tagger=spec))
    # another CPU's fp32 kernels may move a near tie: within an entity or so
    assert result.f1 == pytest.approx(held_out.f1, abs=0.003) and result.sentences == held_out.sentences
    # one qubert-qu/train sentence, "mamallaqta parki", is dev's "mama llaqta parki" but for a space
    assert result.seen_in_training == (1 if held_out.data == "corpus:qubert-qu/dev" else 0)
    seen = evaluate(EvaluationOptions(data="corpus:wikiann-qu/train", tagger=spec)).seen_in_training
    assert seen == 100 and len(read_fingerprints(shipped("task/ner-qu"))) > 1000


@pytest.mark.parametrize(
    "change, said",
    [
        ({"role": "tasks"}, "role must be one of lang, task, fusion, encoder, head, not 'tasks'"),
        ({"scores": [{"data": "dev", "setup": "Stack(qu, ner-qu)", "f1": 0.5}]}, "scores: missing settings"),
        ({"data": [{"corpus": "corpus:x", "source": 3, "licence": None}]}, "option 'source' takes text"),
    ],
)
def test_a_shipped_record_of_another_shape_is_refused_naming_its_file(tmp_path, change, said):
    from xling.pretrained import PRETRAINED_ROOT, RECORD_FILE

    shipped = json.loads((PRETRAINED_ROOT / "multilingual-e5-small" / "task" / "ner-qu" / RECORD_FILE).read_text())
    (tmp_path / RECORD_FILE).write_text(json.dumps(shipped | change))
    with pytest.raises(XlingError) as refused:
        PretrainedRecord.read(tmp_path)
    assert str(tmp_path / RECORD_FILE) in str(refused.value) and said in str(refused.value)


def test_the_heads_training_report_is_a_record_its_recipe_compared_whole(tmp_path):
    from xling.train.mlm_head import HeadRecipe, HeadReport

    file = Path(__file__).resolve().parents[1] / "results" / "mlm-head" / "head-bf16-cpu.json"
    report = HeadReport.read(file)
    assert report.recipe == HeadRecipe() and set(report.held_out_perplexity) == {"qu", "es", "en"}
    record = json.loads(file.read_text())
    (tmp_path / "report.json").write_text(json.dumps(record | {"recipe": {**record["recipe"], "steps": "many"}}))
    with pytest.raises(XlingError, match=r"report\.json: recipe: option 'steps' takes a whole number"):
        HeadReport.read(tmp_path / "report.json")


def test_the_shipping_copy_keeps_what_tagging_reads_in_fp16_and_names_the_language_adapter(trained_workspace, tmp_path):
    import subprocess
    import sys

    from safetensors import safe_open

    from xling.shipping.adapters import copy_adapter
    from xling.train.report import RunReport
    from xling.trained_tasks import TaskRecord

    root, model_dir, _, _ = trained_workspace
    source = root / "ws" / model_dir.name
    copy_adapter(source / "task" / "ner-en", tmp_path / "ner-en", TASK, torch.float16)
    copy_adapter(source / "lang" / "qu", tmp_path / "qu", LANG, torch.float16)
    assert TaskRecord.read(tmp_path / "ner-en").lang_adapter == "en"  # by name: the path was the training machine's
    assert not (tmp_path / "qu" / "head_config.json").is_file()  # the masked-LM head serves training only
    for folder in ("ner-en", "qu"):
        with safe_open(str(tmp_path / folder / "xling_adapter.safetensors"), "pt") as f:
            assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
        assert str(root) not in (tmp_path / folder / "report.json").read_text()
    # the reports read back whole, their data named as the recipe gives it (the runs recorded local files)
    assert RunReport.read(tmp_path / "qu").options.corpus == ["corpus:quechua-text"]
    assert RunReport.read(tmp_path / "ner-en").options.train == "corpus:wikiann-en/train"
    told = subprocess.run([sys.executable, "-m", "xling.shipping.head", "--help"], capture_output=True, text=True)
    assert told.returncode == 0 and "workdir" in told.stdout  # the command the docs give exists


def test_a_shipped_setup_is_scored_with_its_interval_as_the_record_keeps_it(tmp_path):
    from xling.shipping.adapters import score

    data = tmp_path / "few.conll"
    data.write_text("Qusqu\tB-LOC\nllaqtaqa\tO\nPerú\tB-LOC\nsuyupi\tI-LOC\nkachkan\tO\n\nJuan\tB-PER\nrimaq\tO\n\n")
    scored = score(tmp_path / "empty", "qu", "ner-qu", str(data))  # the shipped adapters, as shipping scores them
    assert (scored.data, scored.setup, scored.sentences) == (str(data), "Stack(qu, ner-qu)", 2)
    low, high = scored.f1_interval
    assert 0 <= low <= scored.f1 <= high <= 1 and isinstance(scored.f1, float)
