"""The training loop's set-up of the model: dropout of a frozen encoder, attention on the CPU."""

from __future__ import annotations

import pytest

from tests.tiny import save_tiny_model, synthetic_conll


def _tagging_run(tmp_path, method: str):
    from xling.adapters import AdaptedModel, BottleneckConfig, TaggingHead, TaggingHeadConfig
    from xling.data.conll import read_conll
    from xling.data.labels import label_list
    from xling.methods import METHODS
    from xling.models import load_model
    from xling.train.task import _train_without_adapters
    from xling.train.token_classification import TaggingObjective

    sentences = read_conll(synthetic_conll(tmp_path / "train", 16, 1))
    encoder, tokenizer = load_model(str(save_tiny_model("bert", tmp_path / "tinybert")))
    model = AdaptedModel(encoder)
    model.add_head("ner", TaggingHead(model.hidden_size, TaggingHeadConfig(labels=label_list(sentences))))
    if method == "adapter":
        model.add_adapter("ner", BottleneckConfig.preset("pfeiffer"))
        model.train_adapter("ner", ["ner"])
    else:
        _train_without_adapters(model, "ner", METHODS[method])
    return model, TaggingObjective("ner", sentences, sentences[:4], tokenizer, model, seed=1)


@pytest.mark.parametrize(
    "method, encoder_dropout, dropout_on",
    [("adapter", False, False), ("adapter", True, True), ("full", False, True)],  # a trained encoder keeps it
)
def test_a_frozen_encoder_trains_without_dropout_unless_asked(tmp_path, method, encoder_dropout, dropout_on):
    from torch import nn

    from xling.train.config import TrainConfig
    from xling.train.cpu import ATTENTION, Dropout
    from xling.train.loop import train

    model, objective = _tagging_run(tmp_path, method)
    modes, attention = [], []
    head_dropout = model.heads["ner"].dropout

    def record(module, args):
        dropout = model.encoder.base_model.encoder.layer[0].output.dropout  # the one in the model now
        modes.append((type(dropout), dropout.training, head_dropout.training))
        attention.append(model.config._attn_implementation)

    model.heads["ner"].register_forward_pre_hook(record)
    before = model.config._attn_implementation
    config = TrainConfig(
        max_steps=4, batch_size=4, eval_every=2, checkpoint_every=4, encoder_dropout=encoder_dropout, device="cpu"
    )
    result = train(model, objective, config, tmp_path / "run", {}, "modes")
    # training steps before and after each dev evaluation (which runs in eval mode throughout)
    training = [mode for mode in modes if mode[2]]
    assert result.steps == 4 and len(training) == 4
    assert {mode[1] for mode in training} == {dropout_on}
    # xling's CPU dropout and eager attention while training on the CPU, the model's own afterwards
    assert {mode[0] for mode in modes} == {Dropout}
    assert set(attention) == {ATTENTION} and model.config._attn_implementation == before != ATTENTION
    assert type(model.encoder.base_model.encoder.layer[0].output.dropout) is nn.Dropout


@pytest.mark.parametrize("patience, steps", [(1, 2), (0, 6)])  # 0: never stop early (a recipe has no null)
def test_patience_stops_after_evaluations_without_gain_and_zero_never_stops(tmp_path, patience, steps):
    from xling.train.config import TrainConfig
    from xling.train.loop import train

    model, objective = _tagging_run(tmp_path, "adapter")
    config = TrainConfig(
        max_steps=6, batch_size=4, eval_every=1, checkpoint_every=6, learning_rate=1e-12, patience=patience
    )  # a rate too small to move dev F1: no evaluation improves on the first
    result = train(model, objective, config, tmp_path / "run", {}, "patience")
    assert result.steps == steps and result.stopped_early == (patience > 0)
