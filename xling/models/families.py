"""What xling knows about each encoder family, in one record per family: where adapters attach (module paths,
not forked modelling code), the names of its checkpoint's masked-LM head, where its positions start, its class
in the `adapters` library, and its Transformers config class (the tests build tiny models from it). A new family
is one record in `FAMILIES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from xling.errors import XlingError


@dataclass(frozen=True)
class LayerPaths:
    """Paths relative to the base model, then relative to one transformer layer.

    *_out: the module whose output is the sublayer's projection h (after its dropout), before the residual add;
    *_ln: post-LayerNorm (BERT), the LayerNorm that receives h + x; pre-LayerNorm (`pre_norm`: ModernBERT, XLM-R
    XL), the LayerNorm before the sublayer, which receives the residual stream x; query, key, value: the
    attention's input projections (Linear layers), or with `fused_qkv` one Linear whose output holds the three
    in that order, a third each.
    """

    embeddings: str
    layers: str
    attn_out: str
    attn_ln: str
    ffn_out: str
    ffn_ln: str
    query: str
    key: str
    value: str
    pre_norm: bool = False
    fused_qkv: bool = False

    def site(self, site: str) -> tuple[str, str]:
        return (self.attn_out, self.attn_ln) if site == "attn" else (self.ffn_out, self.ffn_ln)

    def projection(self, target: str) -> str:
        return {"query": self.query, "key": self.key, "value": self.value}[target]


@dataclass(frozen=True)
class ModelFamily:
    title: str  # what the docs and `xling models list` call it
    model_types: tuple[str, ...]  # Transformers' `model_type` values (with "-" for "_")
    config_class: str  # its Transformers config class
    paths: LayerPaths
    # The config's names for hidden size, layers, heads and feed-forward width, where they are not BERT's
    sizes: tuple[str, str, str, str] = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
    mlm_head: dict[str, str] = field(default_factory=dict)  # checkpoint key prefix -> MaskedLMHead name
    position_offset: int = 0  # positions used up before the first token's (RoBERTa's start after the padding index)
    norm_eps: str = "layer_norm_eps"  # the config's name for its LayerNorms' epsilon
    # rotary positions (ModernBERT): an exported graph gives every row its positions, as ONNX Runtime's rotary
    # operator takes them (one row of positions for the whole batch, it refuses)
    rotary: bool = False
    # the config's names of the dense-activation-LayerNorm head its token classifier in Transformers has before the
    # classifier (activation, dense bias, epsilon, LayerNorm bias); None: the classifier reads the hidden states
    classifier_transform: tuple[str, str, str, str] | None = None
    adapterhub_class: str | None = None  # the `adapters` library's flexible-heads class, where it names layers as BERT


_BERT_PATHS = LayerPaths(
    embeddings="embeddings",
    layers="encoder.layer",
    attn_out="attention.output.dropout",
    attn_ln="attention.output.LayerNorm",
    ffn_out="output.dropout",
    ffn_ln="output.LayerNorm",
    query="attention.self.query",
    key="attention.self.key",
    value="attention.self.value",
)
_BERT_HEAD = {
    "cls.predictions.transform.dense.": "dense.",
    "cls.predictions.transform.LayerNorm.": "norm.",
    "cls.predictions.bias": "bias",
}
_ROBERTA_HEAD = {"lm_head.dense.": "dense.", "lm_head.layer_norm.": "norm.", "lm_head.bias": "bias"}

_RECORDS = (
    ModelFamily("BERT", ("bert",), "BertConfig", _BERT_PATHS, mlm_head=_BERT_HEAD, adapterhub_class="BertAdapterModel"),
    ModelFamily(
        "RoBERTa",
        ("roberta",),
        "RobertaConfig",
        _BERT_PATHS,
        mlm_head=_ROBERTA_HEAD,
        position_offset=2,
        adapterhub_class="RobertaAdapterModel",
    ),
    ModelFamily(
        "XLM-R",
        ("xlm-roberta",),
        "XLMRobertaConfig",
        _BERT_PATHS,
        mlm_head=_ROBERTA_HEAD,
        position_offset=2,
        adapterhub_class="XLMRobertaAdapterModel",
    ),
    ModelFamily("CamemBERT", ("camembert",), "CamembertConfig", _BERT_PATHS, mlm_head=_ROBERTA_HEAD, position_offset=2),
    ModelFamily("ELECTRA", ("electra",), "ElectraConfig", _BERT_PATHS),
    ModelFamily(  # DeBERTa-v3 and mDeBERTa-v3 too: their sublayers are laid out as BERT's, their projections apart
        "DeBERTa-v2",
        ("deberta-v2",),
        "DebertaV2Config",
        replace(
            _BERT_PATHS,
            query="attention.self.query_proj",
            key="attention.self.key_proj",
            value="attention.self.value_proj",
        ),
        mlm_head={  # the released checkpoints' names, and Transformers' own for the legacy layout
            "lm_predictions.lm_head.dense.": "dense.",
            "lm_predictions.lm_head.LayerNorm.": "norm.",
            "lm_predictions.lm_head.bias": "bias",
            **_BERT_HEAD,
        },
    ),
    ModelFamily(
        "DistilBERT",
        ("distilbert",),
        "DistilBertConfig",
        LayerPaths(
            embeddings="embeddings",
            layers="transformer.layer",
            attn_out="attention.out_lin",
            attn_ln="sa_layer_norm",
            ffn_out="ffn",
            ffn_ln="output_layer_norm",
            query="attention.q_lin",
            key="attention.k_lin",
            value="attention.v_lin",
        ),
        sizes=("dim", "n_layers", "n_heads", "hidden_dim"),
        mlm_head={"vocab_transform.": "dense.", "vocab_layer_norm.": "norm.", "vocab_projector.bias": "bias"},
    ),
    ModelFamily(  # XLM-R XL and XXL: pre-LayerNorm, the residual added inside each sublayer's output module
        "XLM-R XL",
        ("xlm-roberta-xl",),
        "XLMRobertaXLConfig",
        replace(
            _BERT_PATHS,
            attn_ln="attention.self_attn_layer_norm",
            ffn_out="output.dense",
            ffn_ln="LayerNorm",
            pre_norm=True,
        ),
        mlm_head=_ROBERTA_HEAD,
        position_offset=2,
    ),
    ModelFamily(  # and mmBERT, which is ModernBERT's architecture: pre-LayerNorm, one fused query-key-value Linear
        "ModernBERT",
        ("modernbert",),
        "ModernBertConfig",
        LayerPaths(
            embeddings="embeddings",
            layers="layers",
            attn_out="attn.out_drop",
            attn_ln="attn_norm",  # the first layer's is an identity: the embeddings arrive normalised
            ffn_out="mlp.Wo",
            ffn_ln="mlp_norm",
            query="attn.Wqkv",
            key="attn.Wqkv",
            value="attn.Wqkv",
            pre_norm=True,
            fused_qkv=True,
        ),
        mlm_head={"head.dense.": "dense.", "head.norm.": "norm.", "decoder.bias": "bias"},
        norm_eps="norm_eps",
        rotary=True,
        classifier_transform=("classifier_activation", "classifier_bias", "norm_eps", "norm_bias"),
    ),
)
FAMILIES: dict[str, ModelFamily] = {model_type: family for family in _RECORDS for model_type in family.model_types}
# the families adapters attach to, as the docs and `xling models list` name them
SUPPORTED = [family.title for family in _RECORDS]


def model_type(config) -> str:
    return str(getattr(config, "model_type", "?")).replace("_", "-")


def family_of(config) -> ModelFamily:
    """The family of a Transformers config, or one line saying why xling cannot attach adapters to it."""
    name = model_type(config)
    if name not in FAMILIES:
        raise XlingError(
            f"xling cannot attach adapters to model type {name!r}; supported: {', '.join(sorted(FAMILIES))}"
        )
    return FAMILIES[name]
