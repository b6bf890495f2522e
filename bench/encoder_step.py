"""Seconds per step of adapting the encoder (`xling train-encoder`, each --method) against one language-adapter
step (`xling train-lang --mlm-head pretrained`), on the embedded model, the same batch (8 x 128 Quechua pieces),
masks and precision, measured in one run, interleaved.

    python -m bench.encoder_step [--rounds 5] [--precision auto] [--batch 8] [--seq 128]
"""

from __future__ import annotations

import argparse

import torch

from bench.common import parsed, quechua_lines, setup_threads, time_interleaved, train_as_xling
from xling.adapters import AdaptedModel, BottleneckConfig
from xling.data.labels import IGNORE
from xling.device import autocast, pick_precision
from xling.models import load_model
from xling.train.config import MaskingConfig
from xling.train.encoder import set_trainable
from xling.train.language import mlm_head
from xling.train.loop import make_optimizer
from xling.train.mlm import MaskedLMObjective, pack_blocks
from xling.train.text_config import ENCODER_METHODS, EncoderOptions, LanguageAdapterOptions


def step_fn(method: str | None, blocks: torch.Tensor, precision: str):
    """One optimiser step of `method` (None: a MAD-X language adapter under the frozen shipped head)."""
    encoder, tokenizer = load_model("e5-small")
    model = AdaptedModel(encoder)
    head = mlm_head(model, "e5-small", "pretrained")
    model.add_head("qu", head)
    if method is None:
        model.add_adapter("qu", BottleneckConfig.preset("madx-lang"))
        model.train_adapter("qu", train=["qu"])
        head.requires_grad_(False)
        train_as_xling(model, precision, LanguageAdapterOptions)
    else:
        set_trainable(model, head, EncoderOptions(lang="qu", corpus=["-"], method=method))
        train_as_xling(model, precision, EncoderOptions)
    objective = MaskedLMObjective("qu", blocks, blocks, tokenizer, MaskingConfig(), seed=0)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = make_optimizer(params, 1e-4)
    tensors = objective.prepare({"index": torch.arange(len(blocks))}, step=0)
    scale = 1 / max(1, int((tensors["labels"] != IGNORE).sum()))

    def step():
        with autocast("cpu", precision):
            loss = objective.loss(model, tensors, scale)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step, sum(p.numel() for p in params)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--methods", default=",".join(ENCODER_METHODS), help="the encoder methods timed")
    args = parsed(parser, {"rounds": 1, "batch": 2, "seq": 32, "methods": "lora"})
    setup_threads()
    precision = pick_precision(args.precision, "cpu")
    tokenizer = load_model("e5-small")[1]
    blocks = pack_blocks(quechua_lines(sample=2000), tokenizer, args.seq, allow_partial=False)[: args.batch]
    steps, trained = {}, {}
    for method in (None, *args.methods.split(",")):
        label = "language adapter" if method is None else f"encoder, {method}"
        steps[label], trained[label] = step_fn(method, blocks, precision)
    print(f"model e5-small, batch {args.batch} x {args.seq}, {precision}, threads {torch.get_num_threads()}")
    times = time_interleaved(steps, args.rounds)
    base = times["language adapter"]
    for label, seconds in times.items():
        print(f"{label:24s} {seconds:6.2f} s/step  {trained[label]:>12,} trained  ratio {seconds / base:.2f}")


if __name__ == "__main__":
    main()
