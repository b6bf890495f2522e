"""Seconds per masked-LM training step: xling versus the plain Transformers path.

Both train the same MAD-X language adapter (Pfeiffer, reduction 2, invertible) plus the
same masked-LM head transform and bias, on the same model, batch (8 x 128) and masks.
The plain path is `AutoModelForMaskedLM` computing vocabulary logits for every token;
xling computes them only at masked positions, and optionally over the corpus pieces only;
it runs in fp32 and under bf16 autocast (what `--precision auto` picks where bf16 runs
faster; trained weights and losses stay fp32, frozen Linear weights are stored in bf16).

    python -m bench.mlm_step [--rounds 5] [--batch 8] [--seq 128]
"""

from __future__ import annotations

import argparse

import torch

from bench.common import parsed, quechua_lines, setup_threads, time_interleaved, train_as_xling
from xling.adapters import AdaptedModel, BottleneckConfig
from xling.data.labels import IGNORE
from xling.device import autocast
from xling.models import load_model, resolve_model_dir
from xling.train.config import MaskingConfig
from xling.train.language import mlm_head
from xling.train.loop import make_optimizer
from xling.train.mlm import MaskedLMObjective, pack_blocks
from xling.train.text_config import LanguageAdapterOptions


def plain_step_fn(model_dir, blocks, objective):
    from transformers import AutoModelForMaskedLM

    mlm = AutoModelForMaskedLM.from_pretrained(model_dir)
    adapted = AdaptedModel(mlm)
    adapted.add_adapter("qu", BottleneckConfig.preset("madx-lang"))
    adapted.train_adapter("qu", train=["qu"])
    head = mlm.cls.predictions
    head.transform.requires_grad_(True)
    head.bias.requires_grad_(True)
    # MAD-X: undo the invertible adapter right before the tied output embeddings.
    head.decoder.register_forward_pre_hook(lambda module, args: (adapted.invert_embeddings(args[0]),))
    optimizer = torch.optim.AdamW([p for p in mlm.parameters() if p.requires_grad], lr=1e-4, fused=True)
    inputs, chosen = objective.mask(blocks, torch.Generator().manual_seed(0))
    labels = torch.where(chosen, blocks, torch.full_like(blocks, -100))

    def step():
        loss = mlm(input_ids=inputs, attention_mask=(inputs != 1).long(), labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def xling_step_fn(tokenizer, model_dir, train_blocks, held_out, vocab_from_corpus, precision="fp32"):
    batch = len(held_out)
    model = AdaptedModel(load_model("e5-small")[0])  # its own encoder: bf16 training stores its Linear weights in bf16
    name = "qu-vocab" if vocab_from_corpus else "qu"
    model.add_adapter(name, BottleneckConfig.preset("madx-lang"))
    model.add_head(name, mlm_head(model, model_dir))
    model.train_adapter(name, train=[name])
    train_as_xling(model, precision, LanguageAdapterOptions)
    objective = MaskedLMObjective(
        name, train_blocks, held_out, tokenizer, MaskingConfig(), seed=0, vocab_from_corpus=vocab_from_corpus
    )
    optimizer = make_optimizer([p for p in model.parameters() if p.requires_grad], 1e-4)
    tensors = objective.prepare({"index": torch.arange(batch)}, step=0)
    scale = 1 / max(1, int((tensors["labels"] != IGNORE).sum()))

    def step():
        model.set_active(name)
        with autocast("cpu", precision):
            loss = objective.loss(model, tensors, scale)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step, objective


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--lines", type=int, help="a sample of the corpus's lines (default: all)")
    args = parsed(parser, {"rounds": 1, "batch": 2, "seq": 32, "lines": 200})
    setup_threads()
    lines = quechua_lines(sample=args.lines)
    tokenizer = load_model("e5-small")[1]
    model_dir = resolve_model_dir("e5-small")
    train_blocks = pack_blocks(lines, tokenizer, args.seq, allow_partial=False)
    held_out = train_blocks[-args.batch :]
    full_step, objective = xling_step_fn(tokenizer, model_dir, train_blocks, held_out, False)
    vocab_step, vocab_objective = xling_step_fn(tokenizer, model_dir, train_blocks, held_out, True)
    bf16_step, _ = xling_step_fn(tokenizer, model_dir, train_blocks, held_out, False, "bf16")
    bf16_vocab_step, _ = xling_step_fn(tokenizer, model_dir, train_blocks, held_out, True, "bf16")
    plain_step = plain_step_fn(model_dir, train_blocks[: args.batch], objective)
    print(
        f"model e5-small, batch {args.batch} x {args.seq}, threads {torch.get_num_threads()}, "
        f"corpus vocabulary {len(vocab_objective.vocab_ids):,} of {len(tokenizer):,} pieces"
    )
    times = time_interleaved(
        {
            "plain": plain_step,
            "xling fp32": full_step,
            "xling fp32 --vocab-from-corpus": vocab_step,
            "xling bf16": bf16_step,
            "xling bf16 --vocab-from-corpus": bf16_vocab_step,
        },
        args.rounds,
    )
    for name, seconds in times.items():
        print(f"{name:32s} {seconds:6.2f} s/step   ratio to plain {seconds / times['plain']:.2f}")


if __name__ == "__main__":
    main()
