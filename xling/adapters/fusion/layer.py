"""AdapterFusion: attention over the outputs of several adapters, per layer and site."""

from __future__ import annotations

import torch
from torch import nn

from xling.adapters.bottleneck.layer import site_key
from xling.adapters.fusion.config import FusionConfig


class FusionLayer(nn.Module):
    """Query: the sublayer output; keys and values: each adapter's output.

    out = sum_n softmax_n(Q(q) . K(up_n) / T) * V(up_n), added to the sublayer's output by the caller
    """

    def __init__(self, hidden: int, config: FusionConfig):
        super().__init__()
        self.config = config
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        for linear in (self.query, self.key):
            nn.init.normal_(linear.weight, std=config.init_std)
            nn.init.zeros_(linear.bias)
        with torch.no_grad():
            self.value.weight.copy_(torch.eye(hidden) + torch.randn(hidden, hidden) * config.value_noise)
            self.value.bias.zero_()
        self.last_attention: torch.Tensor | None = None
        self.record_attention = False

    def forward(self, query: torch.Tensor, ups: torch.Tensor) -> torch.Tensor:
        """query: (..., d); ups: (..., n_adapters, d)."""
        q = self.query(query).unsqueeze(-2)  # (..., 1, d)
        k = self.key(ups)  # (..., n, d)
        scores = (q * k).sum(-1) / self.config.temperature
        probs = torch.softmax(scores, dim=-1)  # (..., n)
        if self.record_attention:
            self.last_attention = probs.detach()
        return (probs.unsqueeze(-1) * self.value(ups)).sum(-2)

    def value_penalty(self) -> torch.Tensor:
        eye = torch.eye(self.value.weight.shape[0], device=self.value.weight.device, dtype=self.value.weight.dtype)
        return (self.value.weight - eye).pow(2).sum()


class AdapterFusion(nn.Module):
    """A named fusion over a fixed, ordered list of adapters."""

    def __init__(
        self, adapter_names: list[str], config: FusionConfig, hidden: int, layers: list[int], sites: tuple[str, ...]
    ):
        super().__init__()
        self.adapter_names = list(adapter_names)
        self.config = config
        self.layers = nn.ModuleDict(
            {site_key(layer, site): FusionLayer(hidden, config) for layer in layers for site in sites}
        )

    def layer(self, layer: int, site: str) -> FusionLayer | None:
        key = site_key(layer, site)
        return self.layers[key] if key in self.layers else None

    def value_penalty(self) -> torch.Tensor:
        return self.config.value_penalty * sum(layer.value_penalty() for layer in self.layers.values())
