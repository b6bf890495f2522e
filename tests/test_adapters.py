"""The adapter core: modules, placements, composition, training masks, save and load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.tiny import tiny_model
from xling.adapters import (
    AdaptedModel,
    BottleneckConfig,
    Fuse,
    FusionConfig,
    Stack,
    TaggingHead,
    TaggingHeadConfig,
)
from xling.adapters.adapterhub import export_adapterhub
from xling.adapters.bottleneck.invertible import NICECoupling
from xling.adapters.row_split import PASS_COST_TOKENS, pass_cost, row_groups
from xling.adapters.saving import load, save
from xling.errors import XlingError

FIXTURE = Path(__file__).parent / "fixtures" / "adapterhub"
TEXTS = ["qusqu llaqtapi runa", "the city of lima peru juan maria"]


def adapted(arch="bert", seed=0):
    encoder, tokenizer = tiny_model(arch, seed)
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    return AdaptedModel(encoder), batch


def perturb(module, std=0.3):
    """Give adapters clearly non-identity weights, as after training."""
    with torch.no_grad():
        for param in module.parameters():
            param.add_(torch.randn_like(param) * std)


def outputs(model, batch, setup=None):
    model.eval()
    with model.activated(setup), torch.no_grad():
        return model(**batch)


@pytest.mark.parametrize("arch", ["bert", "xlm-roberta", "distilbert", "deberta-v2"])
@pytest.mark.parametrize("preset", ["pfeiffer", "houlsby", "madx-lang"])
def test_near_identity_at_initialisation(arch, preset):
    model, batch = adapted(arch)
    frozen = outputs(model, batch)
    model.add_adapter("a", BottleneckConfig.preset(preset))
    with_adapter = outputs(model, batch, "a")
    assert not torch.equal(frozen, with_adapter)  # the adapter is really in the path
    cosine = torch.nn.functional.cosine_similarity(frozen, with_adapter, dim=-1)
    assert cosine.min() > 0.999


def test_initial_weights_are_truncated_normal():
    model, _ = adapted()
    adapter = model.add_adapter("a", BottleneckConfig.preset("houlsby", init_std=0.01))
    weights = torch.cat([b.down.weight.flatten() for b in adapter.blocks.values()])
    assert weights.abs().max() <= 0.02 and 0.004 < weights.std() < 0.01
    assert all(torch.count_nonzero(b.up.bias) == 0 for b in adapter.blocks.values())


def test_placements():
    model, _ = adapted()
    houlsby = model.add_adapter("h", BottleneckConfig.preset("houlsby"))
    pfeiffer = model.add_adapter("p", BottleneckConfig.preset("pfeiffer"))
    assert sorted(houlsby.blocks) == ["0_attn", "0_ffn", "1_attn", "1_ffn", "2_attn", "2_ffn"]
    assert sorted(pfeiffer.blocks) == ["0_ffn", "1_ffn", "2_ffn"]
    assert houlsby.blocks["0_ffn"].down.out_features == 32 // 16


def test_invertible_adapter_inverts_exactly():
    torch.manual_seed(0)
    coupling = NICECoupling(32, reduction_factor=2, non_linearity="relu")
    perturb(coupling, 0.3)
    x = torch.randn(4, 7, 32)
    y = coupling(x)
    assert (y - x).abs().max() > 0.1
    assert torch.allclose(coupling.inverse(y), x, atol=1e-5)


def test_invertible_adapter_sits_on_the_embeddings():
    model, batch = adapted()
    adapter = model.add_adapter("qu", BottleneckConfig.preset("madx-lang"))
    perturb(adapter.invertible)
    embeddings = model.encoder.embeddings
    with torch.no_grad():
        plain = embeddings(input_ids=batch["input_ids"])
        with model.activated("qu"):
            transformed = embeddings(input_ids=batch["input_ids"])
            restored = model.invert_embeddings(transformed)
    assert torch.allclose(transformed, adapter.invertible(plain))
    assert (transformed - plain).abs().max() > 0.1
    assert torch.allclose(restored, plain, atol=1e-5)


def test_only_intended_parameters_receive_gradients():
    model, batch = adapted()
    model.add_adapter("qu", BottleneckConfig.preset("madx-lang"))
    model.add_adapter("ner", BottleneckConfig.preset("pfeiffer"))
    model.add_head("ner", TaggingHead(model.hidden_size, TaggingHeadConfig(labels=["O", "B-LOC", "I-LOC"])))
    count = model.train_adapter(Stack("qu", "ner"), train=["ner"])
    assert 0 < count.trainable < count.total
    logits = model.heads["ner"](model(**batch))
    logits.sum().backward()
    with_grad = {n for n, p in model.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert with_grad == trainable
    assert all(n.startswith(("adapters.ner.", "heads.ner.")) for n in trainable)
    assert any(n.startswith("heads.ner.") for n in trainable) and any(n.startswith("adapters.ner.") for n in trainable)
    assert count.trainable == sum(p.numel() for n, p in model.named_parameters() if n in trainable)


def test_train_layer_norms_trains_copies_not_the_original():
    model, batch = adapted()
    model.add_adapter("ner", BottleneckConfig.preset("houlsby", train_layer_norms=True))
    model.train_adapter("ner", train=["ner"])
    model(**batch).sum().backward()
    grads = {n for n, p in model.named_parameters() if p.grad is not None}
    assert "adapters.ner.layer_norms.0_attn.weight" in grads and "adapters.ner.layer_norms.2_ffn.bias" in grads
    assert not any(n.startswith("encoder.") for n in grads)
    # Changing the copy changes the output; the frozen LayerNorm is not what is used.
    before = outputs(model, batch, "ner")
    with torch.no_grad():
        model.adapters["ner"].layer_norms["1_ffn"].bias.add_(1.0)
    assert not torch.allclose(before, outputs(model, batch, "ner"))


def test_stack_order_changes_outputs():
    model, batch = adapted()
    perturb(model.add_adapter("a", BottleneckConfig.preset("pfeiffer")))
    perturb(model.add_adapter("b", BottleneckConfig.preset("pfeiffer")))
    ab = outputs(model, batch, Stack("a", "b"))
    ba = outputs(model, batch, Stack("b", "a"))
    assert (ab - ba).abs().max() > 1e-3
    assert (ab - outputs(model, batch, "a")).abs().max() > 1e-3


def test_fusion_weights_sum_to_one():
    model, batch = adapted()
    for name in ("en", "es"):
        perturb(model.add_adapter(name, BottleneckConfig.preset("pfeiffer")))
    fusion = model.add_fusion(["en", "es"], FusionConfig())
    perturb(fusion, 0.05)
    for layer in fusion.layers.values():
        layer.record_attention = True
    outputs(model, batch, Fuse("en", "es"))
    for layer in fusion.layers.values():
        probs = layer.last_attention
        assert probs.shape == (*batch["input_ids"].shape, 2)
        assert torch.allclose(probs.sum(-1), torch.ones_like(probs[..., 0]))
        assert probs.min() > 0 and (probs - 0.5).abs().max() > 1e-3


def test_fusion_value_starts_at_identity_and_is_regularised():
    model, _ = adapted()
    model.add_adapter("en", BottleneckConfig.preset("pfeiffer"))
    model.add_adapter("es", BottleneckConfig.preset("pfeiffer"))
    fusion = model.add_fusion(["en", "es"])
    value = fusion.layers["0_ffn"].value.weight
    assert torch.allclose(value, torch.eye(32), atol=1e-5) and not torch.equal(value, torch.eye(32))
    model.set_active(Fuse("en", "es"))
    assert float(model.fusion_penalty().detach()) < 1e-8
    with torch.no_grad():
        value.add_(0.1)
    assert float(model.fusion_penalty().detach()) == pytest.approx(0.01 * 32 * 32 * 0.01, rel=1e-3)


def test_share_every_shares_one_parameter_set():
    model, batch = adapted()
    adapter = model.add_adapter("s", BottleneckConfig.preset("pfeiffer", share_every=3))
    plain = model.add_adapter("p", BottleneckConfig.preset("pfeiffer"))
    assert adapter.block(0, "ffn") is adapter.block(1, "ffn") is adapter.block(2, "ffn")
    assert sum(p.numel() for p in adapter.parameters()) * 3 == sum(p.numel() for p in plain.parameters())
    model.train_adapter("s", train=["s"])
    # A random readout: a plain sum of the final LayerNorm's output is constant, its gradient only rounding noise.
    (model(**batch) * torch.randn(model.hidden_size, generator=torch.Generator().manual_seed(0))).sum().backward()
    assert adapter.block(0, "ffn").down.weight.grad.abs().sum() > 0


def test_leave_out_leaves_those_layers_untouched():
    model, batch = adapted()
    perturb(model.add_adapter("a", BottleneckConfig.preset("pfeiffer", leave_out=[0])))
    assert "0_ffn" not in model.adapters["a"].blocks and model.adapters["a"].block(0, "ffn") is None
    model.eval()
    with torch.no_grad():
        base = model.encoder(**batch, output_hidden_states=True).hidden_states
        with model.activated("a"):
            adapted_states = model.encoder(**batch, output_hidden_states=True).hidden_states
    assert torch.equal(base[1], adapted_states[1])  # layer 0 has no adapter
    assert not torch.allclose(base[2], adapted_states[2])


def test_composition_errors():
    with pytest.raises(XlingError, match="another Stack"):
        Stack("a", Stack("b", "c"))
    with pytest.raises(XlingError, match="adapter names only"):
        Fuse("a", Stack("b", "c"))
    with pytest.raises(XlingError, match="at least two"):
        Fuse("a")
    with pytest.raises(XlingError, match="twice"):
        Stack("a", Fuse("a", "b"))
    model, _ = adapted()
    model.add_adapter("a", BottleneckConfig())
    with pytest.raises(XlingError, match="not loaded: b"):
        model.set_active(Stack("a", "b"))
    with pytest.raises(XlingError, match="not loaded: a,c"):
        model.add_adapter("c", BottleneckConfig())
        model.set_active(Fuse("a", "c"))
    with pytest.raises(XlingError, match="invalid adapter name"):
        model.add_adapter("../evil", BottleneckConfig())


def test_unsupported_architecture_is_refused():
    from transformers import GPT2Config, GPT2Model

    with pytest.raises(XlingError, match="supported: .*bert.*distilbert"):
        AdaptedModel(GPT2Model(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50)))


def _full_model(seed=0):
    model, batch = adapted(seed=seed)
    perturb(model.add_adapter("qu", BottleneckConfig.preset("madx-lang")))
    perturb(model.add_adapter("ner", BottleneckConfig.preset("houlsby", train_layer_norms=True, share_every=2)))
    perturb(model.add_adapter("ner2", BottleneckConfig.preset("houlsby", train_layer_norms=True, share_every=2)))
    model.add_head("ner", TaggingHead(model.hidden_size, TaggingHeadConfig(labels=["O", "B-PER", "I-PER"])))
    perturb(model.add_fusion(["ner", "ner2"]), 0.2)
    return model, batch


def test_save_then_load_reproduces_outputs_bit_for_bit(tmp_path):
    model, batch = _full_model()
    for name in ("qu", "ner", "ner2"):
        save(model, name, tmp_path / name)
    save(model, "ner,ner2", tmp_path / "fusion")
    expected_stack = outputs(model, batch, Stack("qu", "ner"))
    expected_fuse = outputs(model, batch, Stack("qu", Fuse("ner", "ner2")))
    expected_logits = model.heads["ner"].eval()(expected_stack)

    fresh, _ = adapted()
    for name in ("qu", "ner", "ner2", "fusion"):
        load(fresh, tmp_path / name)
    assert torch.equal(outputs(fresh, batch, Stack("qu", "ner")), expected_stack)
    assert torch.equal(outputs(fresh, batch, Stack("qu", Fuse("ner", "ner2"))), expected_fuse)
    assert torch.equal(fresh.heads["ner"].eval()(expected_stack), expected_logits)
    assert fresh.heads["ner"].labels == ["O", "B-PER", "I-PER"]
    files = sorted(p.name for p in (tmp_path / "ner").iterdir())
    assert files == ["head_config.json", "head_model.safetensors", "xling_adapter.json", "xling_adapter.safetensors"]


def test_mismatched_base_model_is_refused_before_loading(tmp_path):
    model, _ = _full_model(seed=0)
    save(model, "qu", tmp_path / "qu")
    other, _ = adapted(seed=1)
    with pytest.raises(XlingError, match="does not fit.*embedding_sha256"):
        load(other, tmp_path / "qu")
    assert len(other.adapters) == 0


def test_the_embedded_weights_and_the_hubs_of_the_same_model_pass_with_a_warning(tmp_path):
    model, _ = _full_model(seed=0)
    model.encoder.name_or_path = "multilingual-e5-small"  # the embedded default's 4-bit weights
    save(model, "qu", tmp_path / "qu")
    hubs, _ = adapted(seed=1)  # other weights, named as the Hub model the embedded one was converted from
    hubs.encoder.name_or_path = "intfloat--multilingual-e5-small"
    with pytest.warns(UserWarning, match="other weights of the same model"):
        load(hubs, tmp_path / "qu")
    assert "qu" in hubs.adapters
    another, _ = adapted(seed=1)
    another.encoder.name_or_path = "xlm-roberta-base"
    with pytest.raises(XlingError, match="does not fit.*embedding_sha256"):
        load(another, tmp_path / "qu")


def test_existing_directory_needs_overwrite_and_failed_save_leaves_nothing(tmp_path, monkeypatch):
    model, _ = _full_model()
    save(model, "qu", tmp_path / "qu")
    with pytest.raises(XlingError, match="already exists"):
        save(model, "qu", tmp_path / "qu")
    save(model, "qu", tmp_path / "qu", overwrite=True)

    import xling.adapters.saving as saving

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(saving, "write_weights", broken)
    with pytest.raises(OSError):
        save(model, "ner", tmp_path / "ner")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qu"]


def test_adapterhub_fixture_loads_and_matches():
    from transformers import AutoModel

    expected = load_file(str(FIXTURE / "expected.safetensors"))
    model = AdaptedModel(AutoModel.from_pretrained(FIXTURE / "base", add_pooling_layer=False).eval())
    assert load(model, FIXTURE / "lang") == "lang"
    assert load(model, FIXTURE / "task") == "task"
    assert model.adapters["lang"].config.placement == "pfeiffer" and model.adapters["lang"].config.invertible
    assert model.adapters["task"].config.placement == "houlsby"
    batch = {"input_ids": expected["input_ids"], "attention_mask": expected["attention_mask"]}
    assert load(model, FIXTURE / "lora") == "lora"
    assert model.adapters["lora"].config.targets == ["query", "key", "value"]
    setups = {"lang": "lang", "task": "task", "stack": Stack("lang", "task"), "lora": "lora"}
    for label, setup in {**setups, "lang_lora": Stack("lang", "lora")}.items():
        assert torch.allclose(outputs(model, batch, setup), expected[label], atol=1e-6), label
    assert not torch.allclose(outputs(model, batch), expected["lang"], atol=1e-3)


@pytest.mark.parametrize("name", ["lang", "task", "lora"])
def test_export_writes_what_the_adapters_library_saved(tmp_path, name):
    from transformers import AutoModel

    model = AdaptedModel(AutoModel.from_pretrained(FIXTURE / "base", add_pooling_layer=False).eval())
    load(model, FIXTURE / name)  # saved by the library: Pfeiffer + invertible, and Houlsby
    save(model, name, tmp_path / "xling")
    export_adapterhub(tmp_path / "xling", tmp_path / "exported")
    theirs = json.loads((FIXTURE / name / "adapter_config.json").read_text())
    mine = json.loads((tmp_path / "exported" / "adapter_config.json").read_text())
    assert mine["config"] == {key: theirs["config"][key] for key in mine["config"]}
    assert {k: mine[k] for k in ("hidden_size", "model_type", "name", "version")} == {
        k: theirs[k] for k in ("hidden_size", "model_type", "name", "version")
    }
    original = torch.load(FIXTURE / name / "pytorch_adapter.bin", weights_only=True)
    for exported in (
        torch.load(tmp_path / "exported" / "pytorch_adapter.bin", weights_only=True),
        load_file(str(tmp_path / "exported" / "adapter.safetensors")),
    ):
        assert exported.keys() == original.keys() and all(torch.equal(exported[k], original[k]) for k in original)


def test_export_carries_the_tagging_head_and_refuses_what_the_library_lacks(tmp_path):
    model, _ = _full_model()
    save(model, "qu", tmp_path / "qu")
    save(model, "ner", tmp_path / "ner")  # shares one adapter across two layers: the library cannot
    save(model, "ner,ner2", tmp_path / "fusion")
    model.add_adapter("task", BottleneckConfig.preset("pfeiffer"))
    model.add_head("task", model.heads["ner"])
    save(model, "task", tmp_path / "task")
    export_adapterhub(tmp_path / "task", tmp_path / "exported")
    head = json.loads((tmp_path / "exported" / "head_config.json").read_text())
    assert head["config"]["head_type"] == "tagging" and head["model_class"] == "BertAdapterModel"
    assert head["config"]["label2id"] == {"O": 0, "B-PER": 1, "I-PER": 2}
    weights = torch.load(tmp_path / "exported" / "pytorch_model_head.bin", weights_only=True)
    assert torch.equal(weights["heads.task.1.weight"], model.heads["ner"].classifier.weight)
    # and back: an AdapterHub adapter loads with its tagging head, which gives the same logits
    again, _ = _full_model()
    assert load(again, tmp_path / "exported", name="back") == "back"
    assert again.heads["back"].labels == ["O", "B-PER", "I-PER"]
    hidden = torch.randn(2, 5, model.hidden_size)
    model.heads["ner"].eval()
    again.heads["back"].eval()
    assert torch.equal(again.heads["back"](hidden), model.heads["ner"](hidden))
    # a head the library added without a dropout saves `null`: it takes the model's, as the library does
    head_file = tmp_path / "exported" / "head_config.json"
    head_file.write_text(json.dumps(head | {"config": head["config"] | {"dropout_prob": None}}))
    nulled, _ = _full_model()
    load(nulled, tmp_path / "exported", name="nulled")
    assert nulled.heads["nulled"].dropout.p == nulled.config.hidden_dropout_prob
    bare, _ = _full_model()
    load(bare, tmp_path / "exported", name="bare", head=False)
    assert "bare" in bare.adapters and "bare" not in bare.heads
    # the base model is judged by its weights' fingerprint, which the export carries, not by its name or path
    config_file = tmp_path / "exported" / "adapter_config.json"
    record = json.loads(config_file.read_text())
    config_file.write_text(json.dumps(record | {"model_name": "/somewhere/else/copy-of-it"}))
    load(_full_model()[0], tmp_path / "exported", name="renamed")
    fingerprint = record["xling_base_model"]["fingerprint"] | {"hidden_size": 999}
    changed = record["xling_base_model"] | {"fingerprint": fingerprint}
    config_file.write_text(json.dumps(record | {"xling_base_model": changed}))
    with pytest.raises(XlingError, match="does not fit the loaded model .*differs in: hidden_size"):
        load(_full_model()[0], tmp_path / "exported", name="refused")
    with pytest.raises(XlingError, match="no equivalent of share_every=2, train_layer_norms=True"):
        export_adapterhub(tmp_path / "ner", tmp_path / "x")
    with pytest.raises(XlingError, match="only bottleneck and lora adapters export"):
        export_adapterhub(tmp_path / "fusion", tmp_path / "x")
    assert not (tmp_path / "x").exists()


def right_padded(lengths: list[int], vocab: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    width = max(lengths)
    ids = torch.randint(5, vocab, (len(lengths), width), generator=generator)
    mask = (torch.arange(width) < torch.tensor(lengths)[:, None]).long()
    return ids.masked_fill(mask == 0, 1), mask


def test_uneven_rows_run_in_passes_of_their_own_width_with_the_same_numbers():
    model, _ = adapted("xlm-roberta")
    for name, preset in (("lang", "madx-lang"), ("task", "pfeiffer")):
        model.add_adapter(name, BottleneckConfig.preset(preset))
        perturb(model.adapters[name])
    model.train_adapter(Stack("lang", "task"), train=["task"])
    model.eval()  # no dropout: both ways must compute the same numbers
    vocab = model.config.vocab_size
    lengths = [3, 60, 5, 4, 57, 6, 8, 3]
    ids, mask = right_padded(lengths, vocab)

    cost = PASS_COST_TOKENS["cpu", torch.float32]
    groups = row_groups(mask, cost)
    assert groups is not None and len(groups) > 1
    assert sorted(row for rows, _ in groups for row in rows) == list(range(len(lengths)))
    assert all(width == max(lengths[row] for row in rows) for rows, width in groups)
    assert row_groups(*right_padded([9, 10, 10, 8], vocab)[1:], cost) is None  # little padding
    left_padded = mask.flip(1)
    assert row_groups(left_padded, cost) is None

    weights = torch.randn(len(lengths), ids.shape[1], model.hidden_size)
    results = []
    for split in (True, False):
        hidden = model(input_ids=ids, attention_mask=mask, split_rows=split)
        (hidden * weights * mask[..., None]).sum().backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
        model.zero_grad(set_to_none=True)
        results.append((hidden.detach(), grads))
    (split_hidden, split_grads), (whole_hidden, whole_grads) = results
    real = mask.bool()
    torch.testing.assert_close(split_hidden[real], whole_hidden[real], atol=1e-5, rtol=1e-5)
    assert split_grads.keys() == whole_grads.keys() and split_grads
    for name in whole_grads:
        torch.testing.assert_close(split_grads[name], whole_grads[name], atol=1e-5, rtol=1e-4)


def test_a_pass_costs_what_the_device_and_the_dtype_it_computes_in_say():
    """On a CPU a token costs less in bf16 and a pass about as much: more padding is worth a pass of its own."""
    cpu = torch.device("cpu")
    assert pass_cost(cpu) == PASS_COST_TOKENS["cpu", torch.float32]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert pass_cost(cpu) == PASS_COST_TOKENS["cpu", torch.bfloat16] > PASS_COST_TOKENS["cpu", torch.float32]
    assert pass_cost(torch.device("cuda")) is None  # a GPU never splits
