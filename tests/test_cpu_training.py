"""Training on a CPU: dropout masks from 16-bit random numbers, Transformers' eager attention with that dropout."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.tiny import tiny_model
from xling.train.cpu import ATTENTION, Dropout, cpu_training, inverted_dropout


def test_inverted_dropout_keeps_each_element_with_probability_one_minus_p():
    torch.manual_seed(0)
    x = torch.ones(400_000, requires_grad=True)
    y = inverted_dropout(x, 0.1)
    kept = y != 0
    # each of the four 16-bit lanes of a random word, not only their mix (a lane without its sign bit keeps all)
    for lane in kept.view(-1, 4).T:
        assert abs(lane.float().mean().item() - 0.9) < 0.005  # about 7 standard deviations
    scale = 65536 / (65536 - round(0.1 * 65536))
    assert torch.equal(y[kept], torch.full_like(y[kept], scale))
    y.backward(torch.full_like(x, 2.0))
    assert torch.equal(x.grad, 2.0 * scale * kept)
    torch.manual_seed(0)
    assert torch.equal(inverted_dropout(x.detach(), 0.1), y.detach())  # the seeded generator decides
    assert not torch.equal(inverted_dropout(x.detach(), 0.1), y.detach())
    assert inverted_dropout(x, 0.0) is x
    assert torch.equal(inverted_dropout(x.detach(), 1.0), torch.zeros_like(x))


@pytest.mark.parametrize("arch", ["bert", "deberta-v2"])
def test_cpu_training_swaps_dropout_and_attention_and_undoes_it(arch):
    encoder, tokenizer = tiny_model(arch)
    batch = tokenizer(
        ["qusqu llaqtapi runa", "the city of lima peru juan maria wasi"], padding=True, return_tensors="pt"
    )
    batch = {k: batch[k] for k in ("input_ids", "attention_mask")}
    original = {name: module for name, module in encoder.named_modules() if type(module) is nn.Dropout}
    attention = encoder.config._attn_implementation
    with torch.no_grad():
        expected = encoder(**batch).last_hidden_state
    with cpu_training(encoder, "cpu"):
        swapped = {name: module for name, module in encoder.named_modules() if isinstance(module, nn.Dropout)}
        assert swapped.keys() == original.keys()
        assert all(type(module) is Dropout and module.p == original[name].p for name, module in swapped.items())
        through_transformers = arch == "bert"  # DeBERTa computes its own (relative) attention
        assert encoder.config._attn_implementation == (ATTENTION if through_transformers else "eager")
        with torch.no_grad():
            evaluated = encoder(**batch).last_hidden_state  # eval mode: no dropout; the padding masked out
            encoder.train()
            torch.manual_seed(1)
            first = encoder(**batch).last_hidden_state
            torch.manual_seed(1)
            again = encoder(**batch).last_hidden_state
            if through_transformers:
                for name, module in encoder.named_modules():
                    if type(module) is Dropout and not name.endswith("attention.self.dropout"):
                        module.p = 0.0  # only the attention probabilities still dropped out
                torch.manual_seed(1)
                attention_dropped = encoder(**batch).last_hidden_state
            encoder.eval()
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(evaluated[real], expected[real], atol=1e-5, rtol=1e-5)
    assert torch.equal(first, again) and not torch.allclose(first, expected, atol=1e-3)
    if through_transformers:
        assert not torch.allclose(attention_dropped[real], expected[real], atol=1e-3)
    assert {name: module for name, module in encoder.named_modules() if type(module) is nn.Dropout} == original
    assert encoder.config._attn_implementation == attention


def test_cpu_training_leaves_a_gpu_run_alone():
    encoder, _ = tiny_model("bert")
    attention = encoder.config._attn_implementation
    with cpu_training(encoder, "cuda"):
        assert encoder.config._attn_implementation == attention
        assert not any(type(module) is Dropout for module in encoder.modules())


@pytest.mark.parametrize("arch", ["bert", "xlm-roberta", "deberta-v2"])
def test_the_cpu_fast_paths_give_the_generic_paths_loss_and_gradients(arch):
    """Dropout off, one batch of uneven rows: eager attention, the 16-bit dropout layers and the row split
    (all that `cpu_training` and `split_rows` change) against the encoder's own modules in one padded pass."""
    from transformers import AutoModel

    from tests.tiny import tiny_config, tiny_tokenizer
    from xling.adapters import AdaptedModel, Stack
    from xling.adapters.bottleneck import BottleneckConfig
    from xling.adapters.heads import TaggingHead, TaggingHeadConfig
    from xling.adapters.row_split import PASS_COST_TOKENS, row_groups

    tokenizer = tiny_tokenizer()
    config = tiny_config(arch, len(tokenizer))
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout"):
        if hasattr(config, key):
            setattr(config, key, 0.0)
    torch.manual_seed(0)
    model = AdaptedModel(AutoModel.from_config(config))
    for name, preset in (("lang", "madx-lang"), ("task", "madx-task")):
        model.add_adapter(name, BottleneckConfig.preset(preset))
        with torch.no_grad():
            for param in model.adapters[name].parameters():
                param.add_(torch.randn_like(param) * 0.3)  # clearly non-identity, as after training
    model.add_head("task", TaggingHead(model.hidden_size, TaggingHeadConfig(["O", "B-PER", "I-PER"], dropout=0.0)))
    model.train_adapter(Stack("lang", "task"), train=["task"])
    model.train()  # the training forward, its dropout at p = 0
    lengths = [3, 60, 5, 4, 57, 6, 8, 3]
    width = max(lengths)
    generator = torch.Generator().manual_seed(1)
    mask = (torch.arange(width) < torch.tensor(lengths)[:, None]).long()
    ids = torch.randint(5, len(tokenizer), (len(lengths), width), generator=generator).masked_fill(mask == 0, 1)
    labels = torch.randint(0, 3, (len(lengths), width), generator=generator).masked_fill(mask == 0, -100)
    assert row_groups(mask, PASS_COST_TOKENS["cpu", torch.float32]) is not None  # the batch does take the row split

    def loss_and_gradients(fast: bool):
        with cpu_training(model.encoder, "cpu" if fast else "cuda"):  # "cuda": left as it is
            logits = model.heads["task"](model(input_ids=ids, attention_mask=mask, split_rows=fast))
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
            loss.backward()
        gradients = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
        model.zero_grad(set_to_none=True)
        return loss.detach(), gradients

    fast_loss, fast_gradients = loss_and_gradients(fast=True)
    generic_loss, generic_gradients = loss_and_gradients(fast=False)
    # fp32; the passes sum in another order: agreement to 1e-5 (absolute) / 1e-4 (relative)
    torch.testing.assert_close(fast_loss, generic_loss, atol=1e-5, rtol=1e-5)
    assert fast_gradients.keys() == generic_gradients.keys() and len(fast_gradients) > 4
    for name, gradient in generic_gradients.items():
        torch.testing.assert_close(fast_gradients[name], gradient, atol=1e-5, rtol=1e-4)


BOUND = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"  # oneDNN's environment variable


def test_training_on_a_cpu_bounds_onednn_s_kernels_before_anything_computes(monkeypatch):
    """oneDNN reads its cache's bound once, at the process's first kernel: a run sets it before timing bf16 (where
    `auto` may run the first kernels), and a bound the user set stays."""
    import os

    import xling.device
    from xling.device import KERNELS_KEPT
    from xling.train.config import TrainConfig
    from xling.train.processes import processes

    seen = []
    monkeypatch.setattr(xling.device, "cpu_bf16_speedup", lambda: seen.append(os.environ.get(BOUND)) or 2.0)
    monkeypatch.delenv(BOUND, raising=False)
    processes(TrainConfig(device="cpu"))
    assert seen and set(seen) == {KERNELS_KEPT["training"]}
    monkeypatch.setenv(BOUND, "256")
    processes(TrainConfig(device="cpu"))
    assert os.environ[BOUND] == "256"
