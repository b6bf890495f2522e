"""Average AdapterFusion attention per layer and adapter over a data set (AdapterFusion, Fig. 4)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from xling.data.sources import load_ner
from xling.given_data import LabelledData
from xling.tagging.align import length_batches
from xling.tagging.predict import pad_batch, tagger_windows
from xling.tagging.tagger import Tagger


@dataclass
class FusionAttention:
    layers: list[str]  # each fusion layer, `<layer>_<site>`
    adapters: list[str]
    tokens: int  # the real tokens averaged over
    attention: list[list[float]]  # per layer, the mean weight of each adapter
    fusion: str | None = None
    data: str | None = None  # what it was measured on (`reports`)
    lang: str | None = None
    setup: str | None = None
    json: str | None = None  # where its numbers were written


@torch.inference_mode()
def fusion_attention(tagger: Tagger, data: LabelledData, batch_size: int = 32) -> FusionAttention:
    """The mean attention weight of each fused adapter at each layer, over the data's real tokens."""
    model = tagger.model
    fusion = model.fusions[tagger.head]
    layers = sorted(fusion.layers.items(), key=lambda item: (int(item[0].split("_")[0]), item[0]))
    for _, layer in layers:
        layer.record_attention = True
    sums = {key: torch.zeros(len(fusion.adapter_names), dtype=torch.float64) for key, _ in layers}
    tokens = 0
    sentences = [s.tokens for s in load_ner(data, "validation")]
    windows = tagger_windows(tagger, sentences)
    device = next(model.parameters()).device
    try:
        for batch in length_batches(windows, batch_size):
            ids, mask = pad_batch([windows[i] for i in batch], tagger.tokenizer.pad_token_id, device)
            model(input_ids=ids, attention_mask=mask, split_rows=False)  # last_attention covers the batch
            real = mask.bool()
            for key, layer in layers:
                sums[key] += layer.last_attention[real].double().sum(0).cpu()
            tokens += int(real.sum())
    finally:
        for _, layer in layers:
            layer.record_attention = False
            layer.last_attention = None
    return FusionAttention(
        layers=[key for key, _ in layers],
        adapters=fusion.adapter_names,
        tokens=tokens,
        attention=[(sums[key] / max(1, tokens)).tolist() for key, _ in layers],
    )
