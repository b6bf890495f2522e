"""Prediction heads that travel with a task adapter."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from xling.errors import XlingError


@dataclass
class TaggingHeadConfig:
    labels: list[str]
    dropout: float = 0.1
    kind: str = "tagging"

    def to_dict(self) -> dict:
        return asdict(self)


class TaggingHead(nn.Module):
    """Token classification: dropout and a linear layer over the encoder's hidden states."""

    def __init__(self, hidden: int, config: TaggingHeadConfig):
        super().__init__()
        self.config = config
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(hidden, len(config.labels))

    @property
    def labels(self) -> list[str]:
        return self.config.labels

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.dropout(hidden))


HEADS = {"tagging": (TaggingHeadConfig, TaggingHead)}


def build_head(config: dict, hidden: int) -> nn.Module:
    kind = config.get("kind")
    if kind not in HEADS:
        raise XlingError(f"unknown head kind {kind!r}; known: {', '.join(HEADS)}")
    config_class, head_class = HEADS[kind]
    return head_class(hidden, config_class(**config))
