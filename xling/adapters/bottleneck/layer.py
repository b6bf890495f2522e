"""Bottleneck adapter modules: one block, and one named adapter spanning all layers."""

from __future__ import annotations

import torch
from torch import nn

from xling.adapters.bottleneck.config import BottleneckConfig, activation
from xling.adapters.bottleneck.invertible import NICECoupling
from xling.adapters.kind import AdapterModule


def near_identity_init(module: nn.Module, std: float) -> None:
    """Houlsby et al.: zero-mean normal truncated at two std, zero biases."""
    for layer in module.modules():
        if isinstance(layer, nn.Linear):
            nn.init.trunc_normal_(layer.weight, mean=0.0, std=std, a=-2 * std, b=2 * std)
            nn.init.zeros_(layer.bias)


class Bottleneck(nn.Module):
    """down-projection, non-linearity, up-projection; the caller adds the skip connection."""

    def __init__(self, hidden: int, bottleneck: int, non_linearity: str):
        super().__init__()
        self.down = nn.Linear(hidden, bottleneck)
        self.act = activation(non_linearity)
        self.up = nn.Linear(bottleneck, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(self.act(self.down(x)))


def site_key(layer: int, site: str) -> str:
    return f"{layer}_{site}"


class BottleneckAdapter(AdapterModule, nn.Module):
    """A named adapter: blocks per layer (or per group of shared layers) and optional extras."""

    def __init__(self, config: BottleneckConfig, model):
        nn.Module.__init__(self)
        self.config = config
        self.num_layers = model.num_layers
        hidden = model.hidden_size
        size = max(1, int(hidden // config.reduction_factor))
        self.blocks = nn.ModuleDict()
        for layer in self.adapted_layers:
            for site in config.sites:
                key = self.block_key(layer, site)
                if key not in self.blocks:
                    self.blocks[key] = Bottleneck(hidden, size, config.non_linearity)
        self.invertible = (
            NICECoupling(hidden, config.invertible_reduction_factor, config.invertible_non_linearity)
            if config.invertible
            else None
        )
        near_identity_init(self, config.init_std)
        # Own copies of the LayerNorms after each site, starting from the frozen model's values.
        self.layer_norms = nn.ModuleDict()
        if config.train_layer_norms:
            for layer in self.adapted_layers:
                for site in config.sites:
                    original = model.layer_norm_module(layer, site)
                    copy = nn.LayerNorm(hidden, eps=original.eps)
                    copy.load_state_dict(original.state_dict())
                    self.layer_norms[site_key(layer, site)] = copy

    @property
    def adapted_layers(self) -> list[int]:
        return [i for i in range(self.num_layers) if i not in self.config.leave_out]

    def block_key(self, layer: int, site: str) -> str:
        return site_key(layer // self.config.share_every, site)

    @property
    def reads_normalised(self) -> bool:
        return self.config.reads_normalised

    def block_sites(self) -> tuple[str, ...]:
        return self.config.sites

    def fused_placement(self) -> tuple:
        return self.config.placement, tuple(self.config.leave_out)

    def block(self, layer: int, site: str) -> Bottleneck | None:
        if layer in self.config.leave_out:
            return None
        return self.blocks[self.block_key(layer, site)] if site in self.config.sites else None

    def layer_norm(self, layer: int, site: str) -> nn.LayerNorm | None:
        key = site_key(layer, site)
        return self.layer_norms[key] if key in self.layer_norms else None
