"""Remove the adapters of every continuous span of layers and measure the drop in F1.

As in Houlsby et al. (Fig. 6) and the Mohebbi & Rajaee report (Fig. 8): no retraining;
the model is loaded once and each span is switched off in turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xling.data.sources import load_scored
from xling.given_data import LabelledData
from xling.scoring.entities import score
from xling.tagging.tagger import Tagger


@dataclass
class LayerAblation:
    f1: float  # with every adapter
    sentences: int
    drop: list[list[float | None]]  # relative F1 drop removing layers i..j; None (JSON null) below the diagonal
    data: str | None = None  # what it was measured on (`reports`)
    lang: str | None = None
    setup: str | None = None
    json: str | None = None  # where its numbers were written


def layer_ablation(
    tagger: Tagger,
    data: LabelledData,
    limit: int | None = None,
    on_span: Callable[[int, int], None] = lambda i, j: None,
) -> LayerAblation:
    """The F1 with every adapter, and its relative drop with the adapters of each span of layers removed."""
    sentences = load_scored(data, limit)
    tokens, gold = [s.tokens for s in sentences], [s.tags for s in sentences]

    def f1() -> float:
        return score(gold, [[tag for tag, _ in p] for p in tagger.tag_words(tokens)]).f1

    full = f1()
    layers = tagger.model.num_layers
    drop: list[list[float | None]] = [[None] * layers for _ in range(layers)]
    for first in range(layers):
        for last in range(first, layers):
            on_span(first, last)
            with tagger.model.without_layers(range(first, last + 1)):
                drop[first][last] = (full - f1()) / full if full else 0.0
    return LayerAblation(full, len(sentences), drop)
