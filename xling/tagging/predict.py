"""Batched prediction of word-level tags with an AdaptedModel and a tagging head."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import torch

from xling.adapters import AdaptedModel
from xling.device import autocast
from xling.models.stored_weights import linear_weights_stored_for
from xling.tagging import align
from xling.tagging.align import Window, padded, predict_windows, windows_for


def max_window(model: AdaptedModel, tokenizer, requested: int | None = None) -> int:
    """The longest window the model takes (its position limit), or `requested` if smaller."""
    limit = min(getattr(model.config, "max_position_embeddings", 512), tokenizer.model_max_length or 512, 512)
    limit -= model.family.position_offset
    return min(limit, requested) if requested else limit


def tagger_windows(tagger, sentences: list[list[str]]) -> list[Window]:
    """`sentences` as a PyTorch tagger's model windows them: its longest window, overlapping by `STRIDE` sub-tokens."""
    return windows_for(sentences, tagger.tokenizer, max_window(tagger.model, tagger.tokenizer), align.STRIDE)


def pad_batch(windows: list[Window], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    ids, mask = padded(windows, pad_id)
    return torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device)


@torch.inference_mode()
def predict_probabilities(
    model: AdaptedModel,
    tokenizer,
    sentences: list[list[str]],
    head: str,
    batch_size: int = 32,
    max_len: int | None = None,
    stride: int = align.STRIDE,
    precision: str | None = None,
    stored_weights: dict | None = None,
) -> list[np.ndarray]:
    """Per sentence, a (words, labels) array of tag probabilities; `xling.data.decoding` makes them tags.

    `precision` (fp32, bf16, fp16) sets the autocast, with the Linear weights stored in its dtype meanwhile
    (`stored_weights` keeps those copies for the next call); None keeps the caller's (e.g. the training
    loop's)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    if precision:
        context = autocast(device.type, precision)
        weights = linear_weights_stored_for(model, precision, {} if stored_weights is None else stored_weights)
    else:
        context = weights = nullcontext()
    tagger = model.heads[head]

    def run_batch(windows: list[Window]) -> np.ndarray:
        ids, mask = pad_batch(windows, tokenizer.pad_token_id, device)
        with context:
            logits = tagger(model(input_ids=ids, attention_mask=mask))
        return logits.float().softmax(-1).cpu().numpy()

    with weights:
        max_tokens = align.CPU_MAX_TOKENS if device.type == "cpu" else None
        window = max_window(model, tokenizer, max_len)
        probabilities = predict_windows(
            sentences, tokenizer, tagger.labels, run_batch, window, batch_size, max_tokens, stride
        )
    model.train(was_training)
    return probabilities
