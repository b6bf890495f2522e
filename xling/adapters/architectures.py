"""Where adapters attach in each supported encoder: module paths, not forked modelling code."""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from xling.errors import XlingError


@dataclass(frozen=True)
class LayerPaths:
    """Paths relative to the base model, then relative to one transformer layer.

    *_out: the module whose output is the sublayer's projection (after its dropout),
    before the residual add; *_ln: the LayerNorm that receives projection + residual.
    """

    embeddings: str
    layers: str
    attn_out: str
    attn_ln: str
    ffn_out: str
    ffn_ln: str

    def site(self, site: str) -> tuple[str, str]:
        return (self.attn_out, self.attn_ln) if site == "attn" else (self.ffn_out, self.ffn_ln)


_BERT_LIKE = LayerPaths(
    embeddings="embeddings",
    layers="encoder.layer",
    attn_out="attention.output.dropout",
    attn_ln="attention.output.LayerNorm",
    ffn_out="output.dropout",
    ffn_ln="output.LayerNorm",
)

ARCHITECTURES: dict[str, LayerPaths] = {
    "bert": _BERT_LIKE,
    "roberta": _BERT_LIKE,
    "xlm-roberta": _BERT_LIKE,
    "camembert": _BERT_LIKE,
    "electra": _BERT_LIKE,
    "deberta-v2": _BERT_LIKE,  # DeBERTa-v3 and mDeBERTa-v3 too: their sublayers are laid out as BERT's
    "distilbert": LayerPaths(
        embeddings="embeddings",
        layers="transformer.layer",
        attn_out="attention.out_lin",
        attn_ln="sa_layer_norm",
        ffn_out="ffn",
        ffn_ln="output_layer_norm",
    ),
}


def layer_paths(model: nn.Module) -> LayerPaths:
    model_type = getattr(model.config, "model_type", "?").replace("_", "-")
    if model_type not in ARCHITECTURES:
        raise XlingError(
            f"xling cannot attach adapters to model type {model_type!r}; supported: {', '.join(sorted(ARCHITECTURES))}"
        )
    return ARCHITECTURES[model_type]
