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
