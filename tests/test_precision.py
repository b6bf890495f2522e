"""Precision: bf16 autocast where the hardware has bf16 units, fp32 weights and losses always."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest
import torch

from tests.tiny import run_xling, save_tiny_model, synthetic_conll
from xling.errors import XlingError


def test_auto_picks_bf16_only_where_the_cpu_runs_it_clearly_faster(monkeypatch):
    import xling.device as device

    device.warn_bf16_slower.cache_clear()
    monkeypatch.setattr(device, "cpu_bf16_speedup", lambda: 3.0)  # AMX
    assert device.pick_precision("auto", "cpu") == "bf16"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert device.pick_precision("bf16", "cpu") == "bf16"
    monkeypatch.setattr(device, "cpu_bf16_speedup", lambda: 1.1)  # faster, but not enough to pay for precision
    assert device.pick_precision("auto", "cpu") == "fp32"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert device.pick_precision("bf16", "cpu") == "bf16"
    monkeypatch.setattr(device, "cpu_bf16_speedup", lambda: 0.5)  # AVX-512 BF16 on an Intel Xeon without AMX
    assert device.pick_precision("auto", "cpu") == "fp32"
    with pytest.warns(UserWarning, match="take 2.0x the fp32 time on this CPU; --precision auto picks fp32"):
        assert device.pick_precision("bf16", "cpu") == "bf16"  # asked for: honoured, with a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert device.pick_precision("bf16", "cpu") == "bf16"  # said once per process
    monkeypatch.setattr(device, "cpu_bf16_speedup", lambda: 0.0)
    assert device.pick_precision("auto", "cpu") == "fp32"
    with pytest.warns(UserWarning, match="no bf16 matrix units"):
        assert device.pick_precision("bf16", "cpu") == "bf16"
    with pytest.raises(XlingError, match="fp16 runs on a GPU only"):
        device.pick_precision("fp16", "cpu")
    with pytest.raises(XlingError, match="precision must be one of auto, fp32, bf16, fp16"):
        device.pick_precision("half", "cpu")


def test_the_bf16_speedup_is_measured_where_the_cpu_has_bf16_instructions():
    from xling.device import cpu_bf16_speedup, measured_bf16_speedup

    has_units = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    assert (cpu_bf16_speedup() > 0) == has_units and np.isfinite(cpu_bf16_speedup())
    assert not has_units or np.isfinite(measured_bf16_speedup())


@pytest.mark.parametrize(
    "kept", ['{"cpu": "x", "bf16_speedup": "fast"}', '{"bf16_speedup": 2', "[]", '{"cpu": "x", "bf16_speedup": -5}']
)
def test_a_damaged_speedup_record_is_measured_again_and_kept(tmp_path, monkeypatch, kept):
    from xling import device

    monkeypatch.setenv("XLING_HOME", str(tmp_path))
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True)
    monkeypatch.setattr(device, "measured_bf16_speedup", lambda: 2.5)
    record = device.machine_record(f"bf16-speedup {device.cpu_name()} torch {torch.__version__}")
    record.parent.mkdir(parents=True)
    record.write_text(kept)
    device.cpu_bf16_speedup.cache_clear()
    try:
        assert device.cpu_bf16_speedup() == 2.5
    finally:
        device.cpu_bf16_speedup.cache_clear()
    assert device.Bf16Speedup.read(record) == device.Bf16Speedup(device.cpu_name(), 2.5)


@pytest.mark.parametrize("place", ["machine is a file", "machine is a fifo", "record is a folder", "record is a fifo"])
def test_with_nowhere_to_keep_the_measurement_it_is_measured_and_said_once(tmp_path, monkeypatch, place):
    from xling import device

    monkeypatch.setenv("XLING_HOME", str(tmp_path))
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True)
    monkeypatch.setattr(device, "measured_bf16_speedup", lambda: 2.5)
    record = device.machine_record(f"bf16-speedup {device.cpu_name()} torch {torch.__version__}")
    what, kind = place.split(" is a ")
    where = record.parent if what == "machine" else record
    where.parent.mkdir(parents=True, exist_ok=True)
    {"file": where.write_text, "fifo": lambda _: os.mkfifo(where), "folder": lambda _: where.mkdir()}[kind]("{}")
    device.cpu_bf16_speedup.cache_clear()
    device.not_kept.cache_clear()
    try:
        with pytest.warns(UserWarning, match=f"cannot keep this CPU's bf16 measurement in {record.parent}"):
            assert device.cpu_bf16_speedup() == 2.5  # a FIFO is never opened: no hang
        device.cpu_bf16_speedup.cache_clear()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once per process
            assert device.cpu_bf16_speedup() == 2.5
    finally:
        device.cpu_bf16_speedup.cache_clear()
    assert (where.is_file(), where.is_fifo(), where.is_dir()) == (kind == "file", kind == "fifo", kind == "folder")


@pytest.mark.slow
def test_six_processes_started_at_once_resolve_auto_alike_from_one_measurement_per_machine(tmp_path):
    import subprocess
    import sys

    code = "from xling.device import cpu_bf16_speedup, pick_precision; print(pick_precision('auto', 'cpu'), cpu_bf16_speedup())"
    env = {**os.environ, "XLING_HOME": str(tmp_path / "home")}
    started = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env) for _ in range(6)
    ]
    said = {process.communicate(timeout=120)[0].strip() for process in started}
    assert len(said) == 1 and all(p.returncode == 0 for p in started), said
    records = list((tmp_path / "home" / "machine").glob("*.json")) if (tmp_path / "home" / "machine").is_dir() else []
    has_units = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    assert len(records) == (1 if has_units else 0)  # measured once, where there is anything to measure
    if records:
        records[0].write_text("{damaged")  # measured again, never an error
        again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert again.returncode == 0 and json.loads(records[0].read_text())["bf16_speedup"] > 0


def _record_dtypes(model) -> list:
    """The dtypes the encoder's first feed-forward layer computes in, call by call."""
    seen = []
    layer = model.encoder.base_model.encoder.layer[0].intermediate.dense
    layer.register_forward_hook(lambda module, args, output: seen.append(output.dtype))
    return seen


@pytest.mark.parametrize("precision, computed", [("bf16", torch.bfloat16), ("fp32", torch.float32)])
def test_training_computes_in_the_chosen_precision_and_keeps_what_trains_in_fp32(tmp_path, precision, computed):
    from xling.adapters import AdaptedModel, BottleneckConfig, TaggingHead, TaggingHeadConfig
    from xling.adapters.saving import load, save
    from xling.data.conll import read_conll
    from xling.data.labels import label_list
    from xling.models import load_model
    from xling.train.config import TrainConfig
    from xling.train.loop import train
    from xling.train.token_classification import TaggingObjective

    model_dir = save_tiny_model("bert", tmp_path / "tinybert")
    sentences = read_conll(synthetic_conll(tmp_path / "train", 32, 1))
    encoder, tokenizer = load_model(str(model_dir))
    model = AdaptedModel(encoder)
    model.add_adapter("ner", BottleneckConfig.preset("pfeiffer"))
    model.add_head("ner", TaggingHead(model.hidden_size, TaggingHeadConfig(labels=label_list(sentences))))
    model.train_adapter("ner", ["ner"])
    seen = _record_dtypes(model)
    objective = TaggingObjective("ner", sentences, sentences[:8], tokenizer, model, seed=1)
    config = TrainConfig(max_steps=3, batch_size=8, eval_every=3, checkpoint_every=3, precision=precision)
    result = train(model, objective, config, tmp_path / "run", {}, "precision")
    assert result.steps == 3 and set(seen) == {computed}  # training steps and the dev evaluation alike
    # master weights in fp32; the frozen Linear weights are stored in what they compute in, the embeddings
    # and LayerNorms in fp32 (the residual stream stays fp32, as when tagging)
    assert {p.dtype for p in model.parameters() if p.requires_grad} == {torch.float32}
    linear = [m for m in model.encoder.modules() if isinstance(m, torch.nn.Linear)]
    assert {p.dtype for m in linear for p in m.parameters()} == {computed}
    assert {
        m.weight.dtype for m in model.encoder.modules() if isinstance(m, torch.nn.Embedding | torch.nn.LayerNorm)
    } == {torch.float32}
    assert result.evaluations and all(np.isfinite(v) for e in result.evaluations for v in e.metrics.values())
    # the adapter still fits the model as loaded, into a fresh fp32 model
    save(model, "ner", tmp_path / "ner")
    fresh = AdaptedModel(load_model(str(model_dir))[0])
    assert load(fresh, tmp_path / "ner") == "ner"
    assert torch.equal(
        fresh.adapters["ner"].blocks["0_ffn"].down.weight, model.adapters["ner"].blocks["0_ffn"].down.weight.cpu()
    )


def test_frozen_weights_stored_in_bf16_change_nothing_autocast_computes(tmp_path):
    """What training stores in bf16 is what autocast casts at every call anyway: the hidden states and
    masked-LM logits stay the same to the bit, and the residual stream stays fp32, as when tagging."""
    from xling.adapters import AdaptedModel, BottleneckConfig
    from xling.models import load_model
    from xling.train.frozen import store_frozen_weights
    from xling.train.language import mlm_head

    model_dir = save_tiny_model("bert", tmp_path / "tinybert")
    model = AdaptedModel(load_model(str(model_dir))[0])
    model.add_adapter("qu", BottleneckConfig.preset("madx-lang"))
    model.add_head("qu", mlm_head(model, str(model_dir), "fresh"))
    model.train_adapter("qu", ["qu"])  # the adapter and head train; the encoder and its embeddings are frozen
    ids = torch.randint(5, model.config.vocab_size, (2, 12), generator=torch.Generator().manual_seed(0))

    def outputs():
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            hidden = model(input_ids=ids, attention_mask=torch.ones_like(ids))
            head = model.heads["qu"]
            return hidden, head.logits(model.invert_embeddings(head.transform(hidden)))

    model.eval()
    before = outputs()
    store_frozen_weights(model, "bf16")
    after = outputs()
    assert after[0].dtype == torch.float32 and torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])
    assert model.encoder.get_input_embeddings().weight.dtype == torch.float32


def test_tagging_in_bf16_gives_the_fp32_probabilities_to_bf16_accuracy(trained_workspace):
    from xling import Tagger

    root, model_dir, _, _ = trained_workspace
    sentences = [["Qusqu", "llaqta", "Lima"], ["Juan", "Perú", "suyupi", "tiyan"]]
    probabilities = {}
    for precision in ("fp32", "bf16"):
        tagger = Tagger.load(lang="qu", model=str(model_dir), workspace=str(root / "ws"), precision=precision)
        seen = _record_dtypes(tagger.model)
        probabilities[precision] = [score for tagged in tagger.tag_words(sentences) for _, score in tagged]
        assert set(seen) == {torch.bfloat16 if precision == "bf16" else torch.float32}
    assert np.allclose(probabilities["fp32"], probabilities["bf16"], atol=0.03)


def test_tagging_in_bf16_stores_the_linear_weights_in_bf16_meanwhile_and_gives_them_back(trained_workspace):
    """The bf16 copies give what autocast computes from the fp32 weights, to the bit; afterwards the model is
    fp32 again for any caller, and a weight changed in place is cast again."""
    from xling import Tagger
    from xling.device import autocast
    from xling.tagging.predict import predict_probabilities

    root, model_dir, _, _ = trained_workspace
    sentences = [["Qusqu", "llaqta", "Lima"], ["Juan", "Perú", "suyupi", "tiyan"]]
    tagger = Tagger.load(lang="qu", model=str(model_dir), workspace=str(root / "ws"), precision="bf16", device="cpu")
    model, head = tagger.model, tagger.head
    linear = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    weights = [m.weight for m in linear]
    originals = [w.data_ptr() for w in weights]
    seen = []
    hook = linear[0].register_forward_pre_hook(lambda module, args: seen.append(module.weight.dtype))

    def stored():
        return predict_probabilities(model, tagger.tokenizer, sentences, head, precision="bf16", stored_weights=copies)

    with autocast("cpu", "bf16"):  # the caller's autocast over the fp32 weights
        reference = predict_probabilities(model, tagger.tokenizer, sentences, head)
    copies: dict = {}
    first = stored()
    assert seen == [torch.float32, torch.bfloat16]
    assert all(np.array_equal(a, b) for a, b in zip(reference, first))
    assert all(w.dtype == torch.float32 and w.data_ptr() == data for w, data in zip(weights, originals))
    assert len(copies) == len([p for m in linear for p in m.parameters(recurse=False)])
    bias = model.heads[head].classifier.bias
    kept = copies[bias][1]
    stored()
    assert copies[bias][1] is kept  # reused, not cast again
    with torch.no_grad():
        bias[0] += 5.0  # the first label's logit, far beyond bf16 rounding
    changed = stored()
    assert copies[bias][1] is not kept and torch.equal(copies[bias][1], bias.bfloat16())
    assert all((b[:, 0] > a[:, 0]).all() for a, b in zip(first, changed))
    hook.remove()
    fp32 = predict_probabilities(model, tagger.tokenizer, sentences, head, precision="fp32")
    assert all(p.shape == (len(s), len(model.heads[head].labels)) for p, s in zip(fp32, sentences))


def test_fp16_on_the_cpu_is_refused_in_one_line(tmp_path):
    (tmp_path / "in.txt").write_text("Qusqu llaqta\n")
    run = run_xling("tag", str(tmp_path / "in.txt"), "--lang", "qu", "--precision", "fp16", "--device", "cpu")
    assert run.returncode == 1 and run.stderr.strip() == (
        "error: --precision fp16 runs on a GPU only; use bf16 or fp32 on the CPU"
    )


def test_int8_tagging_quantises_the_linear_layers_and_keeps_the_probabilities_close(trained_workspace):
    from torch.ao.nn.quantized.dynamic import Linear as DynamicInt8Linear

    from xling import Tagger

    root, model_dir, _, _ = trained_workspace
    sentences = [["Qusqu", "llaqta", "Lima"], ["Juan", "Perú", "suyupi", "tiyan"]]
    probabilities = {}
    for precision in ("fp32", "int8"):
        # int8 is CPU-only: pinned, so that the comparison also runs where a GPU is present
        tagger = Tagger.load(
            lang="qu", model=str(model_dir), workspace=str(root / "ws"), precision=precision, device="cpu"
        )
        # the encoder's Linear layers that keep or widen the width are int8; those that narrow (the
        # feed-forward output projections), the adapters and the head stay fp32
        encoder = [m for m in tagger.model.encoder.modules() if isinstance(m, torch.nn.Linear | DynamicInt8Linear)]
        narrowing = [m for m in encoder if m.out_features < m.in_features]
        added = [m for part in (tagger.model.adapters, tagger.model.heads) for m in part.modules()]
        assert narrowing and all(type(m) is torch.nn.Linear for m in narrowing)
        assert all(isinstance(m, DynamicInt8Linear) == (precision == "int8") for m in encoder if m not in narrowing)
        assert not any(isinstance(m, DynamicInt8Linear) for m in added)
        probabilities[precision] = [score for tagged in tagger.tag_words(sentences) for _, score in tagged]
    assert tagger.computed_in == "int8"
    assert np.allclose(probabilities["fp32"], probabilities["int8"], atol=0.05)


def test_int8_is_for_tagging_on_the_cpu_only():
    from xling.device import pick_precision
    from xling.train.config import TrainConfig

    with pytest.raises(XlingError, match="int8 is for tagging and evaluation"):
        TrainConfig(precision="int8")
    with pytest.raises(XlingError, match="int8 .* runs on the CPU only"):
        pick_precision("int8", "cuda")


def test_results_name_the_cpus_int8_units():
    """Result files say which int8 units ran them: int8 speed and ONNX Runtime's kernels depend on them."""
    from xling.device import cpu_units, machine_name

    assert cpu_units({"avx2", "fma"}) == "AVX2"
    assert cpu_units({"avx2", "avx512f", "avx512_vnni"}) == "AVX-512 VNNI"
    assert cpu_units({"avx2", "avx512f", "avx512_vnni", "amx_int8"}) == "AMX"
    assert cpu_units({"avx2", "avx_vnni"}) == "AVX-VNNI" and cpu_units({"neon"}) is None
    assert machine_name().endswith(f"{torch.get_num_threads()} cores")
