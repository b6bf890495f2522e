"""Batched prediction of word-level tags with an AdaptedModel and a tagging head."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import torch

from xling.adapters import AdaptedModel
from xling.device import autocast, linear_weights_stored_for
from xling.tagging.align import Window, merge_predictions, windows_for


def max_window(model: AdaptedModel, tokenizer, requested: int | None = None) -> int:
    """The longest window the model takes (its position limit), or `requested` if smaller."""
    limit = min(getattr(model.config, "max_position_embeddings", 512), tokenizer.model_max_length or 512, 512)
    if getattr(model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        limit -= 2  # their positions start after the padding index
    return min(limit, requested) if requested else limit


def pad_batch(windows: list[Window], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(w.input_ids) for w in windows)
    ids = torch.full((len(windows), width), pad_id, dtype=torch.long)
    for row, window in enumerate(windows):
        ids[row, : len(window.input_ids)] = torch.tensor(window.input_ids)
    return ids.to(device), (ids != pad_id).long().to(device)


# On a CPU, a forward pass over more padded tokens than this is slower per token (its activations leave the
# caches; attention grows with the square of the length): 2,000 Quechua corpus lines at batch size 128 ran 3x
# faster capped here, and at any batch size from 32 to 512 alike. A GPU takes whole batches.
CPU_MAX_TOKENS = 2048


def length_batches(windows: list[Window], batch_size: int, max_tokens: int | None = None) -> list[list[int]]:
    """Indices grouped so that each batch holds windows of similar length (little padding): at most
    `batch_size` windows and, with `max_tokens`, at most that many tokens once padded (a longer window goes
    alone)."""
    batches: list[list[int]] = []
    batch: list[int] = []
    for index in sorted(range(len(windows)), key=lambda i: len(windows[i].input_ids)):
        padded = (len(batch) + 1) * len(windows[index].input_ids)  # ascending: the newcomer sets the width
        if batch and (len(batch) == batch_size or (max_tokens and padded > max_tokens)):
            batches.append(batch)
            batch = []
        batch.append(index)
    return batches + [batch] if batch else batches


@torch.inference_mode()
def predict_probabilities(
    model: AdaptedModel,
    tokenizer,
    sentences: list[list[str]],
    head: str,
    batch_size: int = 32,
    max_len: int | None = None,
    stride: int = 32,
    precision: str | None = None,
    stored_weights: dict | None = None,
) -> list[np.ndarray]:
    """Per sentence, a (words, labels) array of tag probabilities; `xling.tagging.decoding` makes them tags.

    `precision` (fp32, bf16, fp16) sets the autocast, with the Linear weights stored in its dtype meanwhile
    (`stored_weights` keeps those copies for the next call); None keeps the caller's (e.g. the training
    loop's)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    windows = windows_for(sentences, tokenizer, max_window(model, tokenizer, max_len), stride)
    probabilities: list = [None] * len(windows)
    if precision:
        context = autocast(device.type, precision)
        weights = linear_weights_stored_for(model, precision, {} if stored_weights is None else stored_weights)
    else:
        context = weights = nullcontext()
    tagger = model.heads[head]
    with weights:
        for batch in length_batches(windows, batch_size, CPU_MAX_TOKENS if device.type == "cpu" else None):
            ids, mask = pad_batch([windows[i] for i in batch], tokenizer.pad_token_id, device)
            with context:
                logits = tagger(model(input_ids=ids, attention_mask=mask))
            probs = logits.float().softmax(-1).cpu().numpy()
            for row, index in enumerate(batch):
                probabilities[index] = probs[row]
    model.train(was_training)
    # A word with no sub-token (nothing the tokenizer keeps) is outside any entity.
    outside = np.eye(len(tagger.labels), dtype=np.float32)[tagger.labels.index("O") if "O" in tagger.labels else 0]
    merged = merge_predictions(windows, probabilities, [len(s) for s in sentences])
    return [
        np.stack([outside if p is None else p for p in words])
        if words
        else np.zeros((0, len(tagger.labels)), np.float32)
        for words in merged
    ]
