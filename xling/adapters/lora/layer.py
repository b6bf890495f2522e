"""LoRA modules: one low-rank update per adapted projection, and one named adapter spanning all layers."""

from __future__ import annotations

import math

import torch
from torch import nn

from xling.adapters.kind import AdapterModule
from xling.adapters.lora.config import LoraConfig


class LowRankUpdate(nn.Module):
    """x -> (alpha / rank) * B A dropout(x): what a LoRA adds to one projection's output."""

    def __init__(self, in_features: int, out_features: int, config: LoraConfig):
        super().__init__()
        self.lora_A = nn.Parameter(torch.empty(config.rank, in_features))
        self.lora_B = nn.Parameter(torch.zeros(out_features, config.rank))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.dropout = nn.Dropout(config.dropout) if config.dropout else nn.Identity()
        self.scaling = config.scaling

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.dropout(x) @ self.lora_A.t() @ self.lora_B.t()) * self.scaling


class LoraAdapter(AdapterModule, nn.Module):
    """A named LoRA adapter: updates keyed `<layer>_<target>` for the configured projections of every layer."""

    def __init__(self, config: LoraConfig, model):
        nn.Module.__init__(self)
        self.config = config
        self.updates = nn.ModuleDict()
        for layer in range(model.num_layers):
            if layer in config.leave_out:
                continue
            for target in config.targets:
                self.updates[f"{layer}_{target}"] = LowRankUpdate(*model.projection_shape(layer, target), config)

    def projection(self, layer: int, target: str) -> LowRankUpdate | None:
        key = f"{layer}_{target}"
        return self.updates[key] if key in self.updates else None
