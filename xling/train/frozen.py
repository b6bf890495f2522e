"""The frozen part of a model while the rest trains: its Linear weights stored in bf16 under bf16, its dropout off."""

from __future__ import annotations

from xling.adapters import AdaptedModel
from xling.adapters.heads import MaskedLMHead
from xling.device import PRECISION_TABLE, torch_dtype
from xling.models.stored_weights import lower_linear_weights


def store_frozen_weights(model: AdaptedModel, precision: str) -> None:
    """Under bf16, frozen Linear weights are stored in bf16, in place: autocast would cast them to the same
    values at every call. Embeddings and LayerNorms stay fp32, as when tagging: stored in bf16 they would
    carry the whole residual stream in bf16, and the task adapter would learn from other numbers than it
    meets later. What trains stays fp32 (master weights, optimiser state)."""
    if PRECISION_TABLE[precision].frozen_stored:
        dtype = torch_dtype(precision)
        # not the heads: a frozen pretrained head is saved with the adapter, and must be saved as it was loaded
        for part in (model.encoder, model.adapters, model.fusions):
            lower_linear_weights(part, dtype, frozen_only=True)
        for head in model.heads.values():
            if isinstance(head, MaskedLMHead) and not head.embeddings.weight.requires_grad:
                head.store_decoder(dtype)  # the embedding matrix as the masked-LM decoder's weight


def training_mode(model: AdaptedModel, encoder_dropout: bool) -> None:
    """Training mode; without `encoder_dropout` a frozen encoder stays in eval mode: its dropout draws a
    random mask over every activation (a fifth of a task-adapter step on a CPU) to regularise what trains."""
    model.train()
    if not encoder_dropout and not any(p.requires_grad for p in model.encoder.parameters()):
        model.encoder.eval()
