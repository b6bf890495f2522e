"""The MAD-X invertible adapter: a NICE coupling block on the embedding output."""

from __future__ import annotations

import torch
from torch import nn

from xling.adapters.bottleneck.config import activation


def _subnet(dim_in: int, dim_out: int, reduction_factor: float, non_linearity: str) -> nn.Sequential:
    size = max(1, int(dim_in // reduction_factor))
    return nn.Sequential(nn.Linear(dim_in, size), activation(non_linearity), nn.Linear(size, dim_out))


class NICECoupling(nn.Module):
    """y1 = x1 + F(x2), y2 = x2 + G(y1); the inverse undoes both steps exactly."""

    def __init__(self, hidden: int, reduction_factor: float, non_linearity: str):
        super().__init__()
        self.split = hidden // 2
        rest = hidden - self.split
        self.F = _subnet(rest, self.split, reduction_factor, non_linearity)
        self.G = _subnet(self.split, rest, reduction_factor, non_linearity)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x[..., : self.split], x[..., self.split :]
        y1 = x1 + self.F(x2)
        y2 = x2 + self.G(y1)
        return torch.cat((y1, y2), dim=-1)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        y1, y2 = y[..., : self.split], y[..., self.split :]
        x2 = y2 - self.G(y1)
        x1 = y1 - self.F(x2)
        return torch.cat((x1, x2), dim=-1)
