"""Prediction heads that travel with a task adapter."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from xling.adapters.files import HEAD_CONFIG_FILE
from xling.data.labels import check_labels
from xling.errors import XlingError
from xling.fileio import read_json
from xling.options import shown
from xling.records import from_record


@dataclass
class HeadTransform:
    """A dense layer, an activation and a LayerNorm between the encoder and the classifier: the `head` of a
    family whose token classifier in Transformers has one (ModernBERT's), so that a PEFT export gives its logits."""

    activation: str
    bias: bool  # the dense layer's
    norm_eps: float
    norm_bias: bool

    def __post_init__(self):
        from transformers.activations import ACT2FN

        if self.activation not in ACT2FN:
            raise XlingError(f"activation must be one of Transformers' ({', '.join(ACT2FN)}), not {self.activation!r}")


@dataclass
class TaggingHeadConfig:
    labels: list[str]
    dropout: float = 0.1
    kind: str = "tagging"
    transform: HeadTransform | None = None

    def __post_init__(self):
        check_labels(self.labels)
        if not 0 <= self.dropout < 1:
            raise XlingError(f"dropout must be from 0 to below 1, not {self.dropout}")

    def to_dict(self) -> dict:
        return asdict(self)


class Transform(nn.Module):
    """`HeadTransform`'s layers, named as Transformers names them (`head.dense`, `head.norm`)."""

    def __init__(self, hidden: int, config: HeadTransform):
        from transformers.activations import ACT2FN

        super().__init__()
        self.dense = nn.Linear(hidden, hidden, bias=config.bias)
        self.act = ACT2FN[config.activation]
        self.norm = nn.LayerNorm(hidden, eps=config.norm_eps, bias=config.norm_bias)
        nn.init.normal_(self.dense.weight, std=0.02)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.norm(self.act(self.dense(hidden)))


class TaggingHead(nn.Module):
    """Token classification: dropout and a linear layer over the encoder's hidden states (after the family's
    transform, where its token classifier has one)."""

    def __init__(self, hidden: int, config: TaggingHeadConfig):
        super().__init__()
        self.config = config
        self.head = Transform(hidden, config.transform) if config.transform else None
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(hidden, len(config.labels))

    @property
    def labels(self) -> list[str]:
        return self.config.labels

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.head is not None:
            hidden = self.head(hidden)
        return self.classifier(self.dropout(hidden))


def head_transform(model) -> HeadTransform | None:
    """The transform the token classifier of `model`'s family (an AdaptedModel's) has in Transformers, if any."""
    names = model.family.classifier_transform
    return HeadTransform(*(getattr(model.encoder.config, name) for name in names)) if names else None


def tagging_head(model, labels: list[str]) -> TaggingHead:
    """A new tagging head for `model`, with the transform its family's token classifier has."""
    return TaggingHead(model.hidden_size, TaggingHeadConfig(labels=labels, transform=head_transform(model)))


@dataclass
class MaskedLMHeadConfig:
    vocab_size: int
    layer_norm_eps: float = 1e-12
    from_checkpoint: bool = False  # the base model's own head, kept frozen
    kind: str = "mlm"

    def to_dict(self) -> dict:
        return asdict(self)


class MaskedLMHead(nn.Module):
    """Masked-LM output layer: dense, GELU, LayerNorm, then a decoder tied to the input embeddings.

    The decoder weight is the frozen input embedding matrix itself (not a parameter of the
    head, never saved twice); the transform and the output bias are the head's own.
    """

    def __init__(self, hidden: int, config: MaskedLMHeadConfig, embeddings: nn.Embedding):
        super().__init__()
        self.config = config
        self.dense = nn.Linear(hidden, hidden)
        self.act = nn.GELU()
        self.norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        nn.init.normal_(self.dense.weight, std=0.02)
        nn.init.zeros_(self.dense.bias)
        object.__setattr__(self, "embeddings", embeddings)  # tied, deliberately not a sub-module
        self._decoder: torch.Tensor | None = None

    def store_decoder(self, dtype: torch.dtype) -> None:
        """Multiply by a copy of the frozen embedding matrix in `dtype`, cast once instead of at every call;
        the embeddings themselves keep their dtype."""
        self._decoder = self.embeddings.weight.detach().to(dtype)

    def transform(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.norm(self.act(self.dense(hidden)))

    def logits(self, transformed: torch.Tensor, vocab_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Scores over the whole vocabulary, or over `vocab_ids` only."""
        weight, bias = self.embeddings.weight if self._decoder is None else self._decoder, self.bias
        if vocab_ids is not None:
            weight, bias = weight[vocab_ids], bias[vocab_ids]
        return torch.nn.functional.linear(transformed, weight.to(transformed.dtype), bias.to(transformed.dtype))


HEADS = {"tagging": TaggingHeadConfig, "mlm": MaskedLMHeadConfig}


def read_head_config(directory: Path) -> TaggingHeadConfig | MaskedLMHeadConfig:
    """The config of the head xling saved in `directory` (`head_config.json`), typed by its kind; one line naming
    the file otherwise."""
    file = Path(directory) / HEAD_CONFIG_FILE
    config = read_json(file)
    kind = config.get("kind") if isinstance(config, dict) else None
    if not isinstance(kind, str) or kind not in HEADS:
        raise XlingError(f"{file}: unknown head kind {shown(kind)}; known: {', '.join(HEADS)}")
    return from_record(HEADS[kind], config, str(file))


def build_head(head_config: TaggingHeadConfig | MaskedLMHeadConfig, model, where: str = "head config") -> nn.Module:
    """A head from its saved config, for `model` (an AdaptedModel); `where` names the config in errors."""
    if isinstance(head_config, MaskedLMHeadConfig):
        embeddings = model.encoder.get_input_embeddings()
        if head_config.vocab_size != embeddings.num_embeddings:  # checked before the bias is allocated
            raise XlingError(
                f"{where}: vocab_size {head_config.vocab_size} is not the model's {embeddings.num_embeddings}"
            )
        return MaskedLMHead(model.hidden_size, head_config, embeddings)
    return TaggingHead(model.hidden_size, head_config)
