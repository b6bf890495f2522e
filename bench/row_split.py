"""Seconds per task-adapter training step on uneven right-padded batches, the rows run in passes of their own
width (`xling.adapters.row_split.row_groups`) at several pass costs, against one pass over the whole padded batch.

On the device and in the precision that `--device auto --precision auto` pick (a GPU where present), with the
embedded default. The batches: the worst one seen in training (one 511-piece window among 31 short lines) and
batches of 32 random lines of the Quechua corpus (self-training's text), each padded to its longest line. The
pass cost with the least total time is what `PASS_COST_TOKENS` (xling/adapters/row_split.py) should hold for the
device; a device whose batches run fastest in one pass stays out of it.

    python -m bench.row_split [--rounds 10] [--pass-costs 16,64,256,1024,2048,8192] [--batch 32] [--long 511]
"""

from __future__ import annotations

import argparse

import torch

import xling.adapters.row_split as row_split
from bench.common import parsed, quechua_lines, setup_threads, time_interleaved, train_as_xling, training_step
from xling.adapters import AdaptedModel, BottleneckConfig, Stack, TaggingHead, TaggingHeadConfig
from xling.device import pick_device, pick_precision, torch_dtype
from xling.models import load_model
from xling.train.config import TaskAdapterOptions

MAX_LEN = 512
LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]


def row_lengths(tokenizer, batch: int, corpus_batches: int, long: int, seed: int = 0) -> dict[str, list[int]]:
    pieces = lambda text: min(MAX_LEN, len(tokenizer(text)["input_ids"]))  # noqa: E731
    sample = quechua_lines(batch * corpus_batches, seed)
    batches = {
        f"corpus {i + 1}": [pieces(t) for t in sample[i * batch : (i + 1) * batch]] for i in range(corpus_batches)
    }
    return {f"one {long}-piece window, {batch - 1} short": [long] + batches["corpus 1"][1:], **batches}


def padded(lengths: list[int], vocab: int, device: str):
    width = max(lengths)
    mask = (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).long()
    ids = torch.randint(5, vocab, (len(lengths), width)) * mask
    targets = torch.randint(0, len(LABELS), (len(lengths), width)).masked_fill(mask == 0, -100)
    return ids.to(device), mask.to(device), targets.to(device)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--pass-costs", default="16,64,256,1024,2048,8192")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--corpus-batches", type=int, default=8)
    parser.add_argument("--long", type=int, default=511, help="the pieces of the one long window")
    parser.add_argument("--precision", default="auto", help="auto, fp32 or bf16: the pass costs differ between them")
    args = parsed(parser, {"rounds": 1, "pass_costs": "64", "batch": 4, "corpus_batches": 1, "long": 64})
    setup_threads()
    device = pick_device("auto")
    precision = pick_precision(args.precision, device)
    key = (device, torch_dtype(precision) or torch.float32)  # PASS_COST_TOKENS's
    encoder, tokenizer = load_model("e5-small")
    model = AdaptedModel(encoder)
    model.add_head("ner", TaggingHead(model.hidden_size, TaggingHeadConfig(labels=LABELS)))
    model.add_adapter("qu", BottleneckConfig.preset("madx-lang"))
    model.add_adapter("ner", BottleneckConfig.preset("pfeiffer"))
    model.train_adapter(Stack("qu", "ner"), train=["ner"])
    model.to(device)
    train_as_xling(model, precision, TaskAdapterOptions, device)
    params = [p for p in model.parameters() if p.requires_grad]
    default_cost = row_split.PASS_COST_TOKENS.get(key)

    def step_fn(batch, pass_cost: float | None):
        def forward(ids, mask):
            row_split.PASS_COST_TOKENS[key] = pass_cost  # read at each forward; None: one pass
            return model.heads["ner"](model(input_ids=ids, attention_mask=mask))

        return training_step(forward, params, *batch, precision, device)[0]

    costs = [float(c) for c in args.pass_costs.split(",")]
    columns = ["one pass"] + [f"{c:g}" for c in costs]
    print(f"device {device}, precision {precision}, batch {args.batch}, threads {torch.get_num_threads()}")
    print(f"{'batch':32s} {'real/padded':>13s}  " + "  ".join(f"{c:>8s}" for c in columns) + "  (s/step)")
    totals = dict.fromkeys(columns, 0.0)
    for name, lengths in row_lengths(tokenizer, args.batch, args.corpus_batches, args.long).items():
        batch = padded(lengths, len(tokenizer), device)
        steps = {"one pass": step_fn(batch, None)} | {f"{c:g}": step_fn(batch, c) for c in costs}
        times = time_interleaved(steps, args.rounds)
        for column in columns:
            totals[column] += times[column]
        shape = f"{sum(lengths)}/{len(lengths) * max(lengths)}"
        print(f"{name:32s} {shape:>13s}  " + "  ".join(f"{times[c]:8.4f}" for c in columns))
    print(f"{'total':32s} {'':>13s}  " + "  ".join(f"{totals[c]:8.4f}" for c in columns))
    print("total / one pass: " + ", ".join(f"{c} {totals[c] / totals['one pass']:.2f}" for c in columns[1:]))
    best = min(columns, key=totals.__getitem__)
    print(f"fastest on {device} in {precision}: {best} (PASS_COST_TOKENS[{key!r}]: {default_cost}, None: one pass)")


if __name__ == "__main__":
    main()
