"""The embedded model's BERT encoder for inference in plain torch, its weights mapped from the converted
`model.safetensors` rather than read into memory.

Importing Transformers' BERT costs seconds; tagging does not need it. The modules carry Transformers' BERT names
and order (`embeddings`, `encoder.layer.N.attention.output.dropout`, ...), so adapters attach by the same paths,
and `tests/test_models.py` checks the outputs against `BertModel`'s. Training keeps Transformers' model
(`xling.models.loading.load_model`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from xling.fileio import read_json

# Modules are made without storage (the weights are assigned from the file); passing the device to each, not a
# `torch.device` block, keeps torch from loading its Python reference kernels (a second and a half).
META = torch.device("meta")
SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16}


def empty(rows: int, c) -> torch.Tensor:
    return torch.empty(rows, c.hidden_size, device=META)


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, c.pad_token_id, _weight=empty(c.vocab_size, c))
        self.position_embeddings = nn.Embedding(
            c.max_position_embeddings, c.hidden_size, _weight=empty(c.max_position_embeddings, c)
        )
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size, _weight=empty(c.type_vocab_size, c))
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps, device=META)
        self.dropout = nn.Dropout(0.0)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        hidden = self.word_embeddings(input_ids) + self.token_type_embeddings.weight[0]  # as BertModel adds them
        hidden = hidden + self.position_embeddings(positions)
        return self.dropout(self.LayerNorm(hidden))


class SelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.num_attention_heads
        self.query, self.key, self.value = (nn.Linear(c.hidden_size, c.hidden_size, device=META) for _ in range(3))

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, length, width = hidden.shape

        def split(x):
            return x.view(batch, length, self.heads, width // self.heads).transpose(1, 2)

        q, k, v = split(self.query(hidden)), split(self.key(hidden)), split(self.value(hidden))
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1 / math.sqrt(width // self.heads))
        return context.transpose(1, 2).reshape(batch, length, width)


class Output(nn.Module):
    """`LayerNorm(dropout(dense(x)) + residual)`: the hooks read `dropout`'s output and `LayerNorm`'s input."""

    def __init__(self, c, inputs: int):
        super().__init__()
        self.dense = nn.Linear(inputs, c.hidden_size, device=META)
        self.dropout = nn.Dropout(0.0)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps, device=META)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = SelfAttention(c)
        self.output = Output(c, c.hidden_size)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.output(self.self(hidden, mask), hidden)


class Intermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size, device=META)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.dense(hidden))  # the embedded model's exact (erf) GELU


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.intermediate = Intermediate(c)
        self.output = Output(c, c.intermediate_size)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        attended = self.attention(hidden, mask)
        return self.output(self.intermediate(attended), attended)


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList(Layer(c) for _ in range(c.num_hidden_layers))


class LightConfig(SimpleNamespace):
    """The model's `config.json` as attributes, as Transformers' config gives them (`to_dict` as well)."""

    def to_dict(self) -> dict:
        return dict(vars(self))


class LightBert(nn.Module):
    """BERT's encoder for inference: `forward(input_ids, attention_mask).last_hidden_state`, as `BertModel`."""

    def __init__(self, config: LightConfig):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.encoder = Encoder(config)

    @property
    def base_model(self) -> LightBert:
        return self

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> SimpleNamespace:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        # keys that may be attended to, for each query (a view): ONNX Runtime's Attention takes no broadcast mask
        length = input_ids.shape[1]
        mask = attention_mask.bool()[:, None, None, :].expand(-1, 1, length, length)
        hidden = self.embeddings(input_ids)
        for layer in self.encoder.layer:
            hidden = layer(hidden, mask)
        return SimpleNamespace(last_hidden_state=hidden)


def mapped_safetensors(file: Path) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file as views of a copy-on-write memory map: pages are read when used (an
    embedding row when its token comes up), and nothing is copied."""
    with open(file, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    data = np.memmap(file, dtype=np.uint8, mode="c", offset=8 + size)
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        array = data[start:end].view(SAFETENSORS_DTYPES[entry["dtype"]]).reshape(entry["shape"])
        tensors[name] = torch.from_numpy(array)
    return tensors


def load_light_encoder(directory: Path) -> LightBert:
    """The converted embedded model in `directory` as a `LightBert`, its weights mapped, in eval mode."""
    settings = read_json(directory / "config.json")
    config = LightConfig(**settings)
    model = LightBert(config)
    weights = mapped_safetensors(directory / "model.safetensors")
    unused = [key for key in weights if key.startswith("pooler.")]  # a checkpoint's pooler: not for tokens
    model.load_state_dict({k: v for k, v in weights.items() if k not in unused}, strict=True, assign=True)
    return model.eval()
