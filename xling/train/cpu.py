"""How the frozen encoder trains on a CPU: eager attention, and dropout masks drawn 16 bits at a time.

torch's CPU dropout draws one Bernoulli sample per element (about 12 ns each on 2 cores): in a task-adapter step
the frozen encoder's dropout took a fifth of the time. Here each element's mask comes from 16 bits of 64-bit
random words, three times faster, with the same keep probability (to 1/65,536) from the same seeded
generator, so runs stay reproducible and resumable. Attention runs as Transformers' eager attention, where
torch's fused kernels train slower at sentence lengths (the flash backward took a third of a bf16 step, and
with dropout torch falls back to a slower path than eager); its probabilities take the same dropout.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
from torch import nn

ATTENTION = "xling_eager"


def inverted_dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    """Inverted dropout of `x` (training): each element kept with probability 1 - p, kept ones scaled up."""
    dropped = round(p * 65536)  # of the 65,536 values of 16 random bits
    if dropped == 0:
        return x
    if dropped == 65536:
        return x * 0.0
    words = torch.empty((x.numel() + 3) // 4, dtype=torch.int64, device=x.device).random_(-(2**63), None)
    keep = words.view(torch.int16)[: x.numel()].view(x.shape) >= dropped - 32768
    return x * keep * (65536 / (65536 - dropped))


class Dropout(nn.Dropout):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return inverted_dropout(x, self.p) if self.training else x


def eager_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Transformers' eager attention (`AttentionInterface`), its probabilities dropped out as above."""
    scores = torch.matmul(query, key.transpose(2, 3)) * (query.size(-1) ** -0.5 if scaling is None else scaling)
    if attention_mask is not None:
        scores = scores + attention_mask
    probabilities = nn.functional.softmax(scores, dim=-1)
    if module.training and dropout:
        probabilities = inverted_dropout(probabilities, dropout)
    return torch.matmul(probabilities, value).transpose(1, 2).contiguous(), probabilities


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    AttentionInterface.register(ATTENTION, eager_attention)  # a dict update: registering again changes nothing
    AttentionMaskInterface.register(ATTENTION, ALL_MASK_ATTENTION_FUNCTIONS["eager"])


@contextmanager
def cpu_training(encoder: nn.Module, device: str):
    """While training on a CPU: the encoder's dropout layers draw their masks as above, and attention is
    eager (with that dropout where the model takes Transformers' attention functions). Undone afterwards."""
    if device != "cpu":
        yield
        return
    swapped = []
    for parent in encoder.modules():
        for name, child in parent.named_children():
            if type(child) is nn.Dropout:
                swapped.append((parent, name, child))
                setattr(parent, name, Dropout(child.p).train(child.training))  # e.g. --no-encoder-dropout
    attention = encoder.config._attn_implementation
    if getattr(encoder, "_supports_attention_backend", False):
        _register()
        encoder.set_attn_implementation(ATTENTION)
    else:
        encoder.set_attn_implementation("eager")
    try:
        yield
    finally:
        encoder.set_attn_implementation(attention)
        for parent, name, child in swapped:
            setattr(parent, name, child)
