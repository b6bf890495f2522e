"""Adapters on pre-LayerNorm families (ModernBERT, so mmBERT; XLM-R XL), on tiny random models built from their
records, and words from tokenizers that mark no word start (Gemma's, mmBERT's)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.tiny import save_tiny_model, synthetic_conll, tiny_gluing_tokenizer, tiny_model, tiny_tokenizer
from xling.adapters import AdaptedModel, BottleneckConfig, Fuse, Stack
from xling.adapters.lora.config import LoraConfig
from xling.errors import XlingError

PRE_NORM = ["modernbert", "xlm-roberta-xl"]


def adapted(arch: str):
    encoder, tokenizer = tiny_model(arch)
    batch = tokenizer(["qusqu llaqtapi", "the city of lima peru juan"], return_tensors="pt", padding=True)
    return AdaptedModel(encoder).eval(), {k: batch[k] for k in ("input_ids", "attention_mask")}


SETUPS = {
    "houlsby": ("h", [("h", BottleneckConfig.preset("houlsby"))]),
    "pfeiffer": ("p", [("p", BottleneckConfig.preset("pfeiffer"))]),
    "madx": (
        Stack("l", "p"),
        [("l", BottleneckConfig.preset("madx-lang")), ("p", BottleneckConfig.preset("pfeiffer"))],
    ),
    "fusion": (
        Stack("l", Fuse("p", "q")),
        [(n, BottleneckConfig.preset(c)) for n, c in (("l", "madx-lang"), ("p", "pfeiffer"), ("q", "pfeiffer"))],
    ),
    "lora": ("r", [("r", LoraConfig())]),
}


@pytest.mark.parametrize("arch", PRE_NORM)
@pytest.mark.parametrize("setup", SETUPS)
def test_an_adapter_set_to_zero_leaves_the_bare_output_and_a_trained_one_moves_it(arch, setup):
    model, batch = adapted(arch)
    active, adapters = SETUPS[setup]
    for name, config in adapters:
        model.add_adapter(name, config)
    if setup == "fusion":
        model.add_fusion(["p", "q"])
    with torch.no_grad():
        bare = model(**batch)
        for parameter in [*model.adapters.parameters(), *model.fusions.parameters()]:
            parameter.zero_()
        with model.activated(active):
            assert torch.equal(model(**batch), bare)
            for parameter in [*model.adapters.parameters(), *model.fusions.parameters()]:
                parameter.normal_(0, 0.05)
            moved = model(**batch)
    assert (moved - bare).abs().max() > 1e-3


def test_a_pre_norm_adapter_reads_the_sublayer_output_or_the_stream_as_the_adapters_library_does():
    """At layer 0's feed-forward of XLM-R XL (input x, output h), the layer's output becomes x + h + A(h) with a
    Houlsby adapter and x + h + A(x + h) with a Pfeiffer one: what a LayerNorm after the block would receive."""
    model, batch = adapted("xlm-roberta-xl")
    layer, seen = model.encoder.encoder.layer[0], {}
    layer.LayerNorm.register_forward_pre_hook(lambda module, args: seen.update(x=args[0]))
    layer.output.dense.register_forward_hook(lambda module, args, output: seen.update(h=output))
    layer.register_forward_hook(lambda module, args, output: seen.update(y=output))
    with torch.no_grad():
        model(**batch)
        x, h = seen["x"], seen["h"]  # the bare layer's
        for name, placement, reads in (("h", "houlsby", h), ("p", "pfeiffer", x + h)):
            adapter = model.add_adapter(name, BottleneckConfig.preset(placement, leave_out=[1, 2]))
            for parameter in adapter.parameters():
                parameter.normal_(0, 0.1)
            if placement == "houlsby":  # its attention-site block at zero: the feed-forward's input stays x
                for parameter in adapter.block(0, "attn").parameters():
                    parameter.zero_()
            with model.activated(name):
                model(**batch)
            assert torch.allclose(seen["y"], x + h + adapter.block(0, "ffn")(reads), atol=1e-5)


@pytest.mark.parametrize("arch", PRE_NORM)
def test_saved_adapters_reload_to_identical_outputs(arch, tmp_path):
    from tests.tiny import random_madx_adapters
    from xling.adapters.saving import load

    model, batch = adapted(arch)
    lang_dir, task_dir = random_madx_adapters(model, tmp_path)
    fresh, _ = adapted(arch)
    load(fresh, lang_dir)
    load(fresh, task_dir)
    model.eval(), fresh.eval()  # the heads' dropout off
    with torch.no_grad():
        model.set_active(None)
        bare = model.heads["ner"](model(**batch))
        for each in (model, fresh):
            each.set_active(Stack("qu", "ner"))
        expected = model.heads["ner"](model(**batch))
        assert not torch.allclose(expected, bare, atol=1e-3)
        assert torch.equal(fresh.heads["ner"](fresh(**batch)), expected)


def test_lora_on_a_fused_projection_changes_its_query_and_value_thirds_only():
    model, batch = adapted("modernbert")
    wqkv = model.encoder.layers[0].attn.Wqkv  # the first: its input, the embeddings, is the same either way
    lora = model.add_adapter("r", LoraConfig(rank=4))  # query and value
    outputs = []
    wqkv.register_forward_hook(lambda module, args, output: outputs.append(output))  # after LoRA's own hook
    assert lora.projection(0, "query").lora_B.shape == (32, 4)  # a third of the fused Linear's 96 outputs
    with torch.no_grad():
        for parameter in lora.parameters():
            parameter.normal_(0, 0.1)
        model(**batch)
        with model.activated("r"):
            model(**batch)
    bare, adapted_ = (output.split(32, dim=-1) for output in outputs[-2:])
    assert torch.equal(bare[1], adapted_[1])  # key
    assert not torch.allclose(bare[0], adapted_[0]) and not torch.allclose(bare[2], adapted_[2])


def test_a_family_without_a_layer_norm_after_its_sublayers_refuses_to_train_one():
    model, _ = adapted("modernbert")
    with pytest.raises(XlingError, match="ModernBERT normalises before each sublayer: there is no LayerNorm after"):
        model.add_adapter("t", BottleneckConfig.preset("houlsby", train_layer_norms=True))


def test_modernbert_s_masked_lm_head_is_read_into_xling_s(tmp_path):
    from transformers import AutoModelForMaskedLM

    from tests.tiny import tiny_config
    from xling.models import load_model
    from xling.train.language import mlm_head

    tokenizer = tiny_tokenizer()
    torch.manual_seed(0)
    theirs = AutoModelForMaskedLM.from_config(tiny_config("modernbert", len(tokenizer))).eval()
    with torch.no_grad():
        theirs.decoder.bias.normal_(0, 1.0)
    theirs.save_pretrained(tmp_path / "mlm")
    tokenizer.save_pretrained(tmp_path / "mlm")
    encoder, _ = load_model(str(tmp_path / "mlm"))
    model = AdaptedModel(encoder).eval()
    head = mlm_head(model, str(tmp_path / "mlm"), "pretrained")
    assert head.config.from_checkpoint
    ids = tokenizer(["qusqu llaqtapi"], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        expected = theirs(input_ids=ids).logits
        logits = head.logits(head.transform(model(input_ids=ids, attention_mask=torch.ones_like(ids))))
    assert torch.allclose(logits, expected, atol=1e-4)


def test_words_are_split_as_running_text_where_the_tokenizer_marks_no_word_start():
    from xling.tagging.align import joins_split_words, windows_for

    gluing, marking = tiny_gluing_tokenizer(), tiny_tokenizer()
    assert joins_split_words(gluing) and not joins_split_words(marking)
    words = ["juan", "lima", "qusqupi", "the", "city"]
    window = windows_for([words], gluing, 64, 8)[0]
    running = gluing(" ".join(words), add_special_tokens=False)["input_ids"]
    assert window.input_ids[1:-1] == running  # "▁lima", not "lima": the pieces the model learnt
    assert sorted(w for w in window.word_index if w >= 0) == list(range(len(words)))  # each word's first piece


@pytest.mark.parametrize("decoder", ["viterbi", "split", "repair", "drop"])
def test_first_pieces_and_the_decoders_give_the_same_entities_whatever_the_tokenizer(decoder):
    from xling.data.decoding import decode
    from xling.tagging.align import predict_windows

    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    sentences = [["juan", "maria", "qusqupi", "tiyan", "."], ["the", "city", "of", "lima", "peru"]]
    gold = [["B-PER", "I-PER", "B-LOC", "O", "O"], ["O", "O", "O", "B-LOC", "I-LOC"]]

    def run_batch(windows):  # a model that is sure of each word's gold tag on its first piece
        width = max(len(w.input_ids) for w in windows)
        out = np.full((len(windows), width, len(labels)), 1 / len(labels), np.float32)
        for row, window in enumerate(windows):
            for position, word in enumerate(window.word_index):
                if word >= 0:
                    out[row, position] = np.eye(len(labels))[labels.index(gold[window.sentence][word])]
        return out

    tagged = {}
    for name, tokenizer in (("marking", tiny_tokenizer()), ("gluing", tiny_gluing_tokenizer())):
        probabilities = predict_windows(sentences, tokenizer, labels, run_batch, 64, 8, None)
        tagged[name] = [
            [tag for tag, _ in decode(p, labels, decoder, words)] for p, words in zip(probabilities, sentences)
        ]
    assert tagged["gluing"] == tagged["marking"] == gold


@pytest.mark.slow
@pytest.mark.parametrize("arch", PRE_NORM)
def test_mad_x_runs_end_to_end_on_a_pre_norm_family(arch, tmp_path):
    """A language adapter lowers held-out perplexity; a task adapter trains over it; tagging, evaluation, an ONNX
    export (tagging as PyTorch does), a PEFT export of a LoRA adapter, and saved adapters reload to equal logits."""
    from xling.adapters.registry import AdapterChoice
    from xling.exporting import ExportOptions, export
    from xling.tagging.evaluate import evaluate
    from xling.tagging.options import EvaluationOptions
    from xling.tagging.spec import TaggerSpec
    from xling.tagging.tagger import Tagger
    from xling.train.config import TaskAdapterOptions, TrainConfig
    from xling.train.language import train_language_adapter
    from xling.train.task import train_task_adapter
    from xling.train.text_config import LanguageAdapterOptions

    model_dir = save_tiny_model(arch, tmp_path / arch)
    train, dev = synthetic_conll(tmp_path / "train", 200, 1), synthetic_conll(tmp_path / "dev", 40, 2)
    where = {"model": str(model_dir), "workspace": str(tmp_path / "ws")}
    steps = TrainConfig(max_steps=60, eval_every=60, checkpoint_every=60, batch_size=8, learning_rate=5e-3)
    for lang in ("en", "qu"):
        report = train_language_adapter(
            LanguageAdapterOptions(lang=lang, corpus=[str(train)], seq_len=32, training=steps, **where)
        )
        assert report.held_out_perplexity_after < report.held_out_perplexity_before
    task = TrainConfig(epochs=3, batch_size=16, learning_rate=5e-3, eval_every=None)
    train_task_adapter(TaskAdapterOptions(lang="en", train=str(train), dev=str(dev), training=task, **where))
    spec = TaggerSpec(lang="qu", task_adapter="ner-en", **where)
    words = [["juan", "lima", "the", "city"]]
    tagged = Tagger.load(spec).tag_words(words)
    assert len(tagged[0]) == 4
    result = evaluate(EvaluationOptions(data=str(dev), tagger=TaggerSpec(lang="en", task_adapter="ner-en", **where)))
    assert 0 <= result.f1 <= 1 and result.sentences == 40
    export(ExportOptions(adapter="ner-en", target=str(tmp_path / "onnx"), format="onnx", tagger=spec))
    onnx = Tagger.load(TaggerSpec(lang="qu", task_adapter=str(tmp_path / "onnx"), runtime="onnx", **where))
    assert [t for t, _ in onnx.tag_words(words)[0]] == [t for t, _ in tagged[0]]
    lora = TaskAdapterOptions(lang="en", name="ner-lora", train=str(train), dev=str(dev), training=task, **where)
    train_task_adapter(replace_adapter(lora, AdapterChoice(kind="lora")))
    export(ExportOptions(adapter="ner-lora", target=str(tmp_path / "peft"), format="peft", tagger=TaggerSpec(**where)))
    if arch == "modernbert":  # query and value thirds as one update of Wqkv, at twice the rank
        saved = json.loads((tmp_path / "peft" / "adapter_config.json").read_text())
        assert (saved["target_modules"], saved["r"]) == (["Wqkv"], 2 * LoraConfig().rank)
        assert saved["lora_alpha"] / saved["r"] == LoraConfig().scaling
        assert saved["modules_to_save"] == ["head", "classifier"]
    peft_gives_xling_s_logits(model_dir, tmp_path / "ws" / model_dir.name / "task" / "ner-lora", tmp_path / "peft")


def peft_gives_xling_s_logits(model_dir, trained, exported):
    """PEFT over Transformers' token classifier gives the logits of xling's LoRA task adapter, and xling reading the
    export back gives them too (ModernBERT: one LoRA on Wqkv, and the classifier's dense-GELU-LayerNorm head)."""
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForTokenClassification

    from tests.test_lora import xling_logits

    labels = json.loads((exported / "head_config.json").read_text())["labels"]
    base = AutoModelForTokenClassification.from_pretrained(model_dir, id2label=dict(enumerate(labels)))
    theirs = peft.PeftModel.from_pretrained(base, exported).eval()
    ids = torch.randint(5, 60, (2, 12))
    with torch.no_grad():
        peft_logits = theirs(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
    ours = xling_logits(model_dir, trained, ids)
    assert ours.abs().max() > 0 and (ours[..., 0] != ours[..., 1]).any()
    torch.testing.assert_close(peft_logits, ours, atol=1e-4, rtol=0)
    torch.testing.assert_close(xling_logits(model_dir, exported, ids), ours, atol=1e-5, rtol=0)


def replace_adapter(options, choice):
    from dataclasses import replace

    return replace(options, adapter=choice)
