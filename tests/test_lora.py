"""LoRA, the second adapter kind: its arithmetic, composition with bottleneck adapters, training, saving, the
AdapterHub layout, int8, and `xling train-task --adapter-kind lora` from the command line to tagging."""

from __future__ import annotations

import copy
import json
import os

import pytest
import torch
from typer.testing import CliRunner

from tests.test_adapters import adapted, outputs, perturb
from xling.adapters import AdaptedModel, BottleneckConfig, Stack, TaggingHead, TaggingHeadConfig
from xling.adapters.adapterhub import export_adapterhub
from xling.adapters.lora import LoraConfig
from xling.adapters.saving import load, save
from xling.errors import XlingError
from xling.train.report import RunReport


def merged(model: AdaptedModel, name: str):
    """A copy of the frozen encoder with adapter `name`'s updates merged into the projections' weights."""
    encoder = copy.deepcopy(model.encoder)
    plain = AdaptedModel(encoder)  # for its paths; no adapter is added, so no projection hook
    with torch.no_grad():
        for key, update in model.adapters[name].updates.items():
            layer, target = key.split("_")
            linear = plain.projection_module(int(layer), target)
            linear.weight += update.scaling * update.lora_B @ update.lora_A
    return plain


@pytest.mark.parametrize("arch", ["bert", "xlm-roberta", "distilbert", "deberta-v2"])
def test_lora_starts_as_the_frozen_model_and_equals_its_merged_weights(arch):
    model, batch = adapted(arch)
    frozen = outputs(model, batch)
    model.add_adapter("ner", LoraConfig(rank=4, alpha=8, targets=["query", "key", "value"]))
    assert torch.equal(outputs(model, batch, "ner"), frozen)  # B starts at zero
    perturb(model.adapters["ner"])
    adapted_outputs = outputs(model, batch, "ner")
    assert not torch.allclose(adapted_outputs, frozen, atol=1e-3)
    assert torch.allclose(adapted_outputs, outputs(merged(model, "ner"), batch), atol=1e-5)
    assert torch.equal(outputs(model, batch), frozen)  # inactive: the frozen model


def test_lora_over_a_bottleneck_language_adapter_trains_only_its_own_weights():
    model, batch = adapted()
    perturb(model.add_adapter("qu", BottleneckConfig.preset("madx-lang")))
    model.add_adapter("ner", LoraConfig(rank=4))
    model.add_head("ner", TaggingHead(model.hidden_size, TaggingHeadConfig(labels=["O", "B-PER", "I-PER"])))
    counts = model.train_adapter(Stack("qu", "ner"), train=["ner"])
    lora = sum(p.numel() for p in model.adapters["ner"].parameters())
    assert lora == 3 * 2 * (4 * 32 + 32 * 4)  # layers x (query, value) x (A, B)
    assert counts.trainable == lora + sum(p.numel() for p in model.heads["ner"].parameters())
    model.heads["ner"](model(**batch)).sum().backward()
    with_grad = {n for n, p in model.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}
    assert with_grad and all(n.startswith(("adapters.ner.", "heads.ner.")) for n in with_grad)
    # B starts at zero: the first step moves B only, and A follows once B is not zero
    assert any(".lora_B" in n for n in with_grad) and not any(".lora_A" in n for n in with_grad)
    assert all(p.grad is not None for n, p in model.named_parameters() if ".lora_A" in n)


def test_lora_saves_and_loads_bit_for_bit_and_tells_its_kind(tmp_path):
    from peft import PeftConfig

    model, batch = adapted()
    perturb(model.add_adapter("qu", BottleneckConfig.preset("madx-lang")))
    perturb(model.add_adapter("ner", LoraConfig(rank=2, alpha=4, leave_out=[1])))
    expected = outputs(model, batch, Stack("qu", "ner"))
    save(model, "qu", tmp_path / "qu")
    save(model, "ner", tmp_path / "ner")
    record = json.loads((tmp_path / "ner" / "xling_adapter.json").read_text())
    assert record["kind"] == "lora" and record["config"]["rank"] == 2 and record["config"]["leave_out"] == [1]
    # no file that PEFT or AdapterHub would read as theirs: PEFT's own loader finds no config in the folder
    assert not (tmp_path / "ner" / "adapter_config.json").exists()
    with pytest.raises(ValueError, match="adapter_config.json"):
        PeftConfig.from_pretrained(str(tmp_path / "ner"))
    assert not any(key.startswith("1_") for key in model.adapters["ner"].updates)
    fresh, _ = adapted()
    load(fresh, tmp_path / "qu")
    load(fresh, tmp_path / "ner")
    assert torch.equal(outputs(fresh, batch, Stack("qu", "ner")), expected)
    record["kind"] = "prefix"
    (tmp_path / "ner" / "xling_adapter.json").write_text(json.dumps(record))
    with pytest.raises(XlingError, match="unknown adapter kind 'prefix'; xling has bottleneck, lora"):
        load(adapted()[0], tmp_path / "ner")
    (tmp_path / "ner" / "xling_adapter.json").rename(tmp_path / "ner" / "adapter_config.json")
    with pytest.raises(XlingError, match="adapter_config.json is neither PEFT's .* nor AdapterHub's"):
        load(adapted()[0], tmp_path / "ner")


def test_lora_options_and_fusion_are_refused_in_one_line():
    for bad, message in (
        (dict(rank=0), "lora-rank must be at least 1"),
        (dict(alpha=-1.0), "lora-alpha must be a finite number above 0"),
        (dict(targets=["query", "output"]), "lora-targets takes some of query, key, value"),
        (dict(dropout=1.0), "lora-dropout must be between 0 and 1"),
    ):
        with pytest.raises(XlingError, match=message):
            LoraConfig(**bad)
    model, _ = adapted()
    with pytest.raises(XlingError, match="leave-out names layers \\[5\\]"):
        model.add_adapter("x", LoraConfig(leave_out=[5]))
    model.add_adapter("a", BottleneckConfig())
    model.add_adapter("b", LoraConfig())
    with pytest.raises(XlingError, match="AdapterFusion mixes bottleneck adapters; b is lora"):
        model.add_fusion(["a", "b"])


def test_lora_in_the_adapterhub_layout_round_trips(tmp_path):
    model, batch = adapted()
    perturb(model.add_adapter("ner", LoraConfig(rank=4, alpha=8, targets=["query", "value"])))
    model.add_head("ner", TaggingHead(model.hidden_size, TaggingHeadConfig(labels=["O", "B-PER", "I-PER"])))
    expected = outputs(model, batch, "ner")
    save(model, "ner", tmp_path / "xling")
    export_adapterhub(tmp_path / "xling", tmp_path / "hub")
    exported = json.loads((tmp_path / "hub" / "adapter_config.json").read_text())
    assert exported["config"]["architecture"] == "lora"
    assert {k: exported["config"][k] for k in ("r", "alpha", "attn_matrices", "selfattn_lora")} == {
        "r": 4,
        "alpha": 8.0,
        "attn_matrices": ["q", "v"],
        "selfattn_lora": True,
    }
    weights = torch.load(tmp_path / "hub" / "pytorch_adapter.bin", weights_only=True)
    assert "encoder.layer.2.attention.self.value.loras.ner.lora_B" in weights and len(weights) == 3 * 2 * 2
    fresh, _ = adapted()
    assert load(fresh, tmp_path / "hub", name="back") == "back"
    assert torch.equal(outputs(fresh, batch, "back"), expected)
    assert fresh.heads["back"].labels == ["O", "B-PER", "I-PER"]


def test_int8_tagging_keeps_the_lora_update():
    from xling.models.stored_weights import quantize_int8

    model, batch = adapted()
    perturb(model.add_adapter("ner", LoraConfig(rank=4)))
    fp32 = outputs(model, batch, "ner")
    quantize_int8(model)
    assert isinstance(model.projection_module(0, "query"), torch.nn.Linear)  # hooked: left in fp32
    assert not isinstance(model.projection_module(0, "key"), torch.nn.Linear)  # not adapted: quantised
    frozen_int8 = outputs(model, batch)
    int8 = outputs(model, batch, "ner")
    assert (int8 - fp32).abs().max() < (int8 - frozen_int8).abs().max() / 5


@pytest.mark.slow
def test_train_task_with_lora_from_the_command_line_tags_in_a_stack_with_quechua(copied_workspace):
    from xling.cli.app import app
    from xling.tagging.tagger import Tagger

    workspace, model_dir, model_root, dev = copied_workspace
    given = ["--model", str(model_dir), "--workspace", str(workspace)]
    trained = CliRunner().invoke(
        app,
        ["train-task", "ner", "--lang", "en", "--train", str(dev), "--dev", str(dev), "--name", "ner-lora"]
        + [
            "--adapter-kind",
            "lora",
            "--lora-rank",
            "4",
            "--lora-alpha",
            "8",
            "--epochs",
            "20",
            "--batch-size",
            "8",
            "--lr",
            "1e-2",
            *given,
        ],
    )
    assert trained.exit_code == 0, trained.output
    record = json.loads((model_root / "task" / "ner-lora" / "xling_adapter.json").read_text())
    assert record["kind"] == "lora" and record["config"]["rank"] == 4 and record["config"]["alpha"] == 8
    report = RunReport.read(model_root / "task" / "ner-lora")
    assert report.options.adapter.kind == "lora"
    assert report.trainable_parameters == 3 * 2 * (4 * 32 + 32 * 4) + 32 * 5 + 5
    assert report.best.f1 > 0.5
    assert "LoRA (low-rank updates" in (model_root / "task" / "ner-lora" / "README.md").read_text()
    where = {"model": str(model_dir), "workspace": str(workspace)}
    tagger = Tagger.load(lang="qu", task_adapter="ner-lora", precision="fp32", **where)
    assert tagger.setup == Stack("lang-qu", "ner-lora")
    words = [["juan", "lima", "the", "city"]]
    with_lora = tagger.word_probabilities(words)[0]
    onnx = Tagger.load(lang="qu", task_adapter="ner-lora", runtime="onnx", **where)
    assert onnx.word_probabilities(words)[0] == pytest.approx(with_lora, abs=1e-4)  # the export has the update
    with torch.no_grad():  # the update out of the path: other probabilities
        for update in tagger.model.adapters["ner-lora"].updates.values():
            update.lora_B.zero_()
    assert not torch.allclose(torch.tensor(tagger.word_probabilities(words)[0]), torch.tensor(with_lora), atol=1e-4)


def test_options_of_the_kind_not_chosen_are_refused_in_one_line():
    from xling.options import build
    from xling.train.config import TaskAdapterOptions

    given = {"lang": "en", "train": "t", "dev": "d"}
    chosen = build(TaskAdapterOptions, {**given, "adapter_kind": "lora", "lora_rank": 24})
    assert chosen.adapter.kind == "lora" and chosen.adapter.config == LoraConfig(rank=24)
    assert build(TaskAdapterOptions, given).adapter.config == BottleneckConfig.preset("madx-task")
    for values, message in (
        (
            {"adapter_kind": "lora", "reduction_factor": 4},
            "--reduction-factor: options of bottleneck adapters, but the adapter is lora",
        ),
        ({"lora_rank": 4}, "--lora-rank: options of lora adapters, but the adapter is bottleneck"),
        ({"adapter_kind": "lora", "preset": "houlsby"}, "preset 'houlsby' is not a lora adapter's"),
        ({"adapter_kind": "prefix"}, "unknown adapter kind 'prefix'; xling has bottleneck, lora"),
    ):
        with pytest.raises(XlingError, match=message):
            build(TaskAdapterOptions, {**given, **values})


def xling_logits(model_dir, directory, ids) -> torch.Tensor:
    """The tagging logits of the task adapter (or PEFT folder) in `directory` on the bare base model."""
    from xling.models import load_model

    model = AdaptedModel(load_model(str(model_dir))[0])
    name = load(model, directory)
    model.set_active(name)
    model.eval()
    with torch.no_grad():
        return model.heads[name](model(input_ids=ids, attention_mask=torch.ones_like(ids)))


@pytest.mark.slow
def test_a_lora_task_adapter_exports_to_peft_and_peft_gives_its_logits(copied_workspace, tmp_path):
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForTokenClassification

    from tests.tiny import run_xling

    workspace, model_dir, model_root, dev = copied_workspace
    where = ["--model", str(model_dir), "-w", str(workspace)]
    trained = run_xling(
        "train-task", "ner", "--lang", "en", "--train", dev, "--dev", dev, "--name", "ner-peft", "--no-lang-adapter",
        "--adapter-kind", "lora", "--lora-targets", "query,key,value", "--lora-rank", "4", "--epochs", "2", *where,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    exported = run_xling("export", "ner-peft", tmp_path / "peft", "--format", "peft", *where)
    assert exported.returncode == 0, exported.stderr
    saved = json.loads((tmp_path / "peft" / "adapter_config.json").read_text())
    assert saved["peft_type"] == "LORA" and saved["target_modules"] == ["query", "key", "value"]
    assert not (tmp_path / "peft" / "config.json").exists()  # Transformers would take the folder for a whole model
    labels = json.loads((tmp_path / "peft" / "head_config.json").read_text())["labels"]
    base = AutoModelForTokenClassification.from_pretrained(model_dir, id2label=dict(enumerate(labels)))
    theirs = peft.PeftModel.from_pretrained(base, tmp_path / "peft").eval()
    ids = torch.randint(5, 80, (2, 12))
    with torch.no_grad():
        peft_logits = theirs(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
    torch.testing.assert_close(
        peft_logits, xling_logits(model_dir, model_root / "task" / "ner-peft", ids), atol=1e-4, rtol=0
    )
    assert "library_name: peft" in (tmp_path / "peft" / "README.md").read_text()
    tagged = run_xling(
        "tag", "--lang", "en", "-t", tmp_path / "peft", "--no-lang-adapter", "-", *where, input="juan lima\n"
    )
    assert tagged.returncode == 0 and tagged.stdout.strip().replace("[", "").startswith("juan"), tagged.stderr


AUTO_PEFT = """
import sys, torch
{snippet}
ids = torch.load(sys.argv[1])
assert isinstance(ner("juan lima went to peru"), list)
with torch.no_grad():
    for loaded, file in ((model, sys.argv[2]), (ner.model, sys.argv[3])):
        torch.save(loaded.eval()(input_ids=ids, attention_mask=torch.ones_like(ids)).logits, file)
"""


@pytest.mark.slow
def test_a_peft_export_of_a_hub_model_loads_with_autopeft_and_pipeline_offline_from_its_card_s_snippet(tmp_path):
    """Trained on a Hub id (a tiny stand-in placed in a local Hugging Face cache, as after a download), the PEFT
    export names that id, and its card's snippet, AutoPeft and `pipeline("token-classification", model=DIR)` (the
    base fetched by id), both give xling's logits."""
    import re
    import subprocess
    import sys

    pytest.importorskip("peft")
    from tests.test_hub import hub_cache_entry
    from tests.tiny import run_xling, save_tiny_model, synthetic_conll

    model_dir = save_tiny_model("bert", tmp_path / "tinybert")
    hub_cache_entry(tmp_path / "cache", "xling-test/tiny-bert", model_dir)
    offline = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "cache")}
    train, where = synthetic_conll(tmp_path / "train", 60, 1), ["-m", "xling-test/tiny-bert", "-w", tmp_path / "ws"]
    trained = run_xling(
        "train-task", "ner", "--lang", "en", "--train", train, "--dev", train, "--no-lang-adapter", "--name", "ner-lora",
        "--adapter-kind", "lora", "--lora-rank", "4", "--epochs", "1", *where, env=offline,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    exported = run_xling("export", "ner-lora", tmp_path / "peft", "--format", "peft", *where, env=offline)
    assert exported.returncode == 0 and "AutoPeftModelForTokenClassification" in exported.stderr, exported.stderr
    config = json.loads((tmp_path / "peft" / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "xling-test/tiny-bert"
    # what -m was decided to be is recorded, by the adapter and its report: exports and cards read it
    saved = tmp_path / "ws" / "xling-test--tiny-bert" / "task" / "ner-lora"
    assert json.loads((saved / "xling_adapter.json").read_text())["base_model"]["hub_id"] == "xling-test/tiny-bert"
    identity = RunReport.read(saved).model_identity
    assert (identity.kind, identity.label, identity.hub_id) == ("hub", "xling-test--tiny-bert", "xling-test/tiny-bert")
    card = (tmp_path / "peft" / "README.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", card, re.S).group(1).replace("DIR", str(tmp_path / "peft"))
    assert (
        "AutoPeftModelForTokenClassification.from_pretrained(" in snippet
        and 'pipeline("token-classification"' in snippet
    )
    ids = torch.randint(5, 80, (2, 12))
    torch.save(ids, tmp_path / "ids.pt")
    script = tmp_path / "autopeft.py"
    script.write_text(AUTO_PEFT.format(snippet=snippet))
    env = {**os.environ, **offline}
    ran = subprocess.run(
        [sys.executable, script, tmp_path / "ids.pt", tmp_path / "autopeft.pt", tmp_path / "pipeline.pt"],
        env=env,
        text=True,
        capture_output=True,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    ours = xling_logits(model_dir, tmp_path / "peft", ids)
    for loaded in ("autopeft.pt", "pipeline.pt"):
        torch.testing.assert_close(torch.load(tmp_path / loaded), ours, atol=1e-4, rtol=0)


@pytest.mark.slow
def test_a_peft_lora_folder_loads_as_an_xling_lora_adapter_with_peft_s_logits(tmp_path):
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForTokenClassification

    from tests.tiny import run_xling, save_tiny_model
    from xling.models import load_model
    from xling.roles import LANG

    model_dir = save_tiny_model("bert", tmp_path / "tinybert")
    labels = {0: "O", 1: "B-LOC", 2: "I-LOC"}
    base = AutoModelForTokenClassification.from_pretrained(model_dir, num_labels=3, id2label=labels)
    config = peft.LoraConfig(
        task_type="TOKEN_CLS", r=4, lora_alpha=16, target_modules=["query", "value"], layers_to_transform=[1],
        modules_to_save=["classifier"], init_lora_weights=False,  # B random too: the update is not zero
    )  # fmt: skip
    theirs = peft.get_peft_model(base, config).eval()
    theirs.save_pretrained(tmp_path / "from-peft")
    base.config.save_pretrained(tmp_path / "from-peft")  # the labels, as one shares a token-classification adapter
    ids = torch.randint(5, 80, (2, 12))
    with torch.no_grad():
        peft_logits = theirs(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
    torch.testing.assert_close(xling_logits(model_dir, tmp_path / "from-peft", ids), peft_logits, atol=1e-4, rtol=0)
    with pytest.raises(XlingError, match="from-peft/adapter_config.json is a task adapter, not a language adapter"):
        load(AdaptedModel(load_model(str(model_dir))[0]), tmp_path / "from-peft", role=LANG)  # TOKEN_CLS
    where = ["--model", str(model_dir), "-w", str(tmp_path / "ws"), "--no-lang-adapter"]
    tagged = run_xling("tag", "--lang", "qu", "-t", tmp_path / "from-peft", "-", *where, input="qusqu llaqta\n")
    assert tagged.returncode == 0, tagged.stderr
    from safetensors.torch import load_file, save_file

    weights = tmp_path / "from-peft" / "adapter_model.safetensors"
    kept = load_file(weights)
    save_file(kept | {"base_model.model.bert.pooler.dense.lora_A.weight": torch.zeros(4, 32)}, weights)
    unread = run_xling("tag", "--lang", "qu", "-t", tmp_path / "from-peft", "-", *where, input="qusqu\n")
    assert unread.returncode == 1 and "holds tensors xling does not read: base_model.model.bert.pooler" in unread.stderr
    save_file(kept, weights)
    record = json.loads((tmp_path / "from-peft" / "adapter_config.json").read_text())
    (tmp_path / "from-peft" / "adapter_config.json").write_text(json.dumps(record | {"layers_to_transform": "abc"}))
    refused = run_xling("tag", "--lang", "qu", "-t", tmp_path / "from-peft", "-", *where, input="qusqu\n")
    assert refused.returncode == 1 and "'layers_to_transform' takes a whole number or a list" in refused.stderr
    (tmp_path / "from-peft" / "adapter_config.json").write_text(json.dumps(record | {"target_modules": ["dense"]}))
    refused = run_xling("tag", "--lang", "qu", "-t", tmp_path / "from-peft", "-", *where, input="qusqu\n")
    assert refused.returncode == 1 and "PEFT options xling does not support: target_modules" in refused.stderr


@pytest.mark.parametrize(
    "arch, modules",
    [
        ("distilbert", ["q_lin", "v_lin"]),
        ("deberta-v2", ["query_proj", "value_proj"]),
        ("xlm-roberta-xl", ["query", "value"]),
    ],
)
def test_peft_s_lora_reads_by_each_family_s_module_names(arch, modules, tmp_path):
    """A PEFT folder names the projections as the family's modules (DistilBERT's `q_lin`, DeBERTa's
    `query_proj`); xling reads them as its query and value updates, to PEFT's logits."""
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForTokenClassification

    from tests.tiny import save_tiny_model

    model_dir = save_tiny_model(arch, tmp_path / arch)
    base = AutoModelForTokenClassification.from_pretrained(
        model_dir, num_labels=3, id2label={0: "O", 1: "B-LOC", 2: "I-LOC"}
    )
    config = peft.LoraConfig(
        task_type="TOKEN_CLS", r=4, lora_alpha=16, target_modules=modules, modules_to_save=["classifier"],
        init_lora_weights=False,
    )  # fmt: skip
    theirs = peft.get_peft_model(base, config).eval()
    theirs.save_pretrained(tmp_path / "from-peft")
    base.config.save_pretrained(tmp_path / "from-peft")
    ids = torch.randint(5, 80, (2, 12))
    with torch.no_grad():
        peft_logits = theirs(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
    torch.testing.assert_close(xling_logits(model_dir, tmp_path / "from-peft", ids), peft_logits, atol=1e-4, rtol=0)


@pytest.mark.parametrize(
    "damage, said",
    [
        (lambda r: r["config"].__setitem__("rank", "abc"), "option 'rank' takes a whole number, not 'abc'"),
        (lambda r: r.pop("config"), "'config' is missing or not a dict"),
        (lambda r: r["base_model"]["fingerprint"].pop("num_layers"), "architecture, width or layers are missing"),
        ("extra tensor", "xling_adapter.safetensors holds 'notes', which is no LoRA update: not exported"),
    ],
)
def test_a_damaged_lora_folder_is_refused_in_one_line_when_exported_to_peft(tmp_path, damage, said):
    from safetensors.torch import load_file, save_file

    from tests.tiny import run_xling, save_tiny_model
    from xling.adapters.saving import save
    from xling.models import load_model

    model_dir = save_tiny_model("bert", tmp_path / "tinybert")
    model = AdaptedModel(load_model(str(model_dir))[0])
    model.add_adapter("ner-lo", LoraConfig(rank=4))
    model.add_head("ner-lo", TaggingHead(model.hidden_size, TaggingHeadConfig(["O", "B-LOC", "I-LOC"])))
    folder = save(model, "ner-lo", tmp_path / "ws" / "tinybert" / "task" / "ner-lo")
    if damage == "extra tensor":  # one tensor more than LoRA's updates
        weights = folder / "xling_adapter.safetensors"
        save_file(load_file(weights) | {"notes": torch.zeros(2)}, weights)
    else:
        record = json.loads((folder / "xling_adapter.json").read_text())
        damage(record)
        (folder / "xling_adapter.json").write_text(json.dumps(record))
    where = ["--model", str(model_dir), "-w", str(tmp_path / "ws")]
    done = run_xling("export", "ner-lo", tmp_path / "peft", "--format", "peft", *where)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and said in lines[0] and "unexpected" not in lines[0]
    assert not (tmp_path / "peft").exists()
