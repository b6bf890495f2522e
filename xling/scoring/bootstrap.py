"""Uncertainty of entity F1: per-sentence counts, resampled (Koehn 2004; Berg-Kirkpatrick et al. 2012).

A system's result on a data set is kept as counts per sentence: entities found correctly, predicted, and in the
gold data (seqeval's strict IOB2 entities, so their sums give seqeval's micro F1). A bootstrap sample draws the
sentences again with replacement and sums their counts: the model runs once, only the counts are resampled. With
several seeds (counts of shape seeds x sentences x 3) each sample also draws the seeds again and averages their
F1, so the interval holds the spread between seeds as well as between sentences.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence

import numpy as np
from seqeval.scheme import IOB2, Entities

CONFIDENCE = 0.95
DEFAULT_SAMPLES = 1000
BLOCK = 4_000_000  # sample-by-sentence weights drawn at once: 32 MB as float64


def sentence_counts(gold: list[list[str]], predicted: list[list[str]]) -> np.ndarray:
    """(sentences, 3) integers: correct, predicted and gold entities of each sentence."""
    gold_entities = Entities(gold, IOB2).entities
    predicted_entities = Entities(predicted, IOB2).entities
    counts = np.zeros((len(gold), 3), dtype=np.int64)
    for i, (g, p) in enumerate(zip(gold_entities, predicted_entities)):
        counts[i] = len({e.to_tuple() for e in g} & {e.to_tuple() for e in p}), len(p), len(g)
    return counts


def f1(summed: np.ndarray) -> np.ndarray:
    """Micro F1 from summed counts (..., 3); 0 where nothing was predicted or expected (as seqeval)."""
    denominator = summed[..., 1] + summed[..., 2]
    return np.where(denominator > 0, 2 * summed[..., 0] / np.maximum(denominator, 1), 0.0)


def _by_seed(counts: np.ndarray | Sequence) -> np.ndarray:
    counts = np.asarray(counts, dtype=np.int64)
    return counts[None] if counts.ndim == 2 else counts


def _resampled_f1(counts: np.ndarray, weights: np.ndarray, seed_draws: np.ndarray) -> np.ndarray:
    """Mean F1 over the drawn seeds of each sample: (samples,)."""
    per_seed = f1(np.einsum("bn,snk->sbk", weights, counts))  # (seeds, samples)
    return per_seed[seed_draws.T, np.arange(weights.shape[0])].mean(axis=0)


def _draws(seeds: int, sentences: int, samples: int, rng_seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(rng_seed)
    return _drawn(rng, rng, seeds, sentences, samples)


def _drawn(weights_rng, seeds_rng, seeds: int, sentences: int, samples: int) -> tuple[np.ndarray, np.ndarray]:
    """`samples` draws: how often each sentence comes (samples, sentences), then which seeds (samples, seeds)."""
    weights = weights_rng.multinomial(sentences, np.full(sentences, 1 / sentences), size=samples).astype(np.float64)
    seed_draws = seeds_rng.integers(0, seeds, size=(samples, seeds)) if seeds > 1 else np.zeros((samples, 1), np.int64)
    return weights, seed_draws


def _blocks(seeds: int, sentences: int, samples: int, rng_seed: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The bootstrap's draws a bounded block of samples at a time, so that memory stays the same for any number
    of samples; where they fit in one block they are the draws of one call, as every result so far was made."""
    per_block = max(1, BLOCK // sentences)
    if samples <= per_block:
        yield _draws(seeds, sentences, samples, rng_seed)
        return
    weights_rng, seeds_rng = np.random.default_rng(rng_seed), np.random.default_rng([rng_seed, 1])
    for start in range(0, samples, per_block):
        yield _drawn(weights_rng, seeds_rng, seeds, sentences, min(per_block, samples - start))


def _resampled(samples: int, rng_seed: int, *counts: np.ndarray) -> list[np.ndarray]:
    """Each sample's mean F1 over seeds, (samples,), for each of `counts` (of one shape: seeds, sentences, 3),
    all on the same draws, drawn once."""
    blocks = _blocks(counts[0].shape[0], counts[0].shape[1], samples, rng_seed)
    per_block = [[_resampled_f1(each, weights, draws) for each in counts] for weights, draws in blocks]
    return [np.concatenate(parts) for parts in zip(*per_block)]


def sentence_weights(sentences: int, samples: int = DEFAULT_SAMPLES, rng_seed: int = 0) -> np.ndarray:
    """(samples, sentences): how often each bootstrap sample draws each sentence, for a statistic other than F1."""
    return _draws(1, sentences, samples, rng_seed)[0]


def percentile_interval(values: np.ndarray) -> tuple[float, float]:
    """The 95% percentile interval of bootstrap samples."""
    low, high = np.quantile(values, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return float(low), float(high)


def mean_f1(counts) -> float:
    """F1 of each seed, averaged."""
    return float(f1(_by_seed(counts).sum(axis=1)).mean())


def spread(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation over seeds (0 for a single seed)."""
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def over_seeds(values: Sequence[float], counts) -> dict:
    """F1 over seeds as result rows keep it: mean, sd, the pooled 95% interval and the sentences it rests on."""
    mean, sd = spread(values)
    return {"f1": mean, "f1_std": sd, "f1_interval": list(interval(counts)), "sentences": _by_seed(counts).shape[1]}


def interval(counts, samples: int = DEFAULT_SAMPLES, rng_seed: int = 0) -> tuple[float, float]:
    """The 95% percentile bootstrap interval of F1 (of the mean F1 over seeds for counts of several seeds)."""
    return percentile_interval(_resampled(samples, rng_seed, _by_seed(counts))[0])


def paired(a, b, samples: int = DEFAULT_SAMPLES, rng_seed: int = 0) -> dict:
    """A against B on the same sentences (and, with seeds, seed by seed): the difference of mean F1, its 95%
    interval, and the two-sided p-value of no difference (the share of samples whose difference, centred on the
    observed one, is at least as far from zero as the observed one)."""
    a, b = _by_seed(a), _by_seed(b)
    if a.shape != b.shape:
        raise ValueError(f"paired counts must have one shape (seeds, sentences, 3), not {a.shape} and {b.shape}")
    resampled_a, resampled_b = _resampled(samples, rng_seed, a, b)
    differences = resampled_a - resampled_b
    observed = mean_f1(a) - mean_f1(b)
    low, high = percentile_interval(differences)
    p_value = float(np.mean(np.abs(differences - observed) >= abs(observed) - 1e-12))
    return {"difference": observed, "low": float(low), "high": float(high), "p": p_value, "samples": samples}
