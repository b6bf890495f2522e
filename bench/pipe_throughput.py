"""`Tagger.pipe` on raw Quechua corpus lines (lines per second), by batch size, with and without the token cap.

Lines drawn at random from the whole Quechua corpus (`text/qu`: from single words to paragraphs of hundreds),
`Stack(lang, task)` with the embedded model, CPU. On a CPU each forward pass holds at most
`xling.tagging.align.CPU_MAX_TOKENS` padded tokens; "uncapped" lifts that, so that only the batch size
bounds a forward pass (how xling batched before).

It also prints the ceiling that the matrix multiplies alone set: the sampled lines' sub-tokens times the
multiply work of every Linear layer a token passes through, at the fp32 rate this CPU reaches on a multiply of the
embedded model's feed-forward shape.

    python -m bench.pipe_throughput [--lines 1000] [--batch-sizes 32,128]  # about 5 minutes; 512 uncapped alone takes 4
"""

from __future__ import annotations

import argparse
import time

import torch

from bench.common import parsed, quechua_lines, setup_threads, time_interleaved
from xling.adapters import AdaptedModel, BottleneckConfig, Stack, TaggingHead, TaggingHeadConfig
from xling.device import cpu_bf16_speedup
from xling.models import load_model
from xling.tagging import align
from xling.tagging.tagger import Tagger
from xling.tagging.words import tokenize

PRECISIONS = ("fp32", "bf16", "int8") if cpu_bf16_speedup() > 0 else ("fp32", "int8")
LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]


def tagger(precision: str) -> Tagger:
    encoder, tokenizer = load_model("e5-small")
    model = AdaptedModel(encoder)
    torch.manual_seed(0)
    model.add_adapter("qu", BottleneckConfig.preset("madx-lang"))
    model.add_adapter("ner", BottleneckConfig.preset("pfeiffer"))
    model.add_head("ner", TaggingHead(model.hidden_size, TaggingHeadConfig(labels=LABELS)))
    model.set_active(Stack("qu", "ner"))
    return Tagger(model.eval(), tokenizer, "ner", Stack("qu", "ner"), precision=precision)


def multiply_ceiling(tagging: Tagger, lines: list[str]) -> float:
    """Lines per second if every Linear layer ran at this CPU's fp32 multiply rate and nothing else took time."""
    model = tagging.model
    flops_per_token = 2 * sum(
        m.in_features * m.out_features
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.Linear) and "pooler" not in name  # the pooler sees one token a sentence
    )
    tokens = sum(
        len(tagging.tokenizer([t.text for t in tokenize(line)], is_split_into_words=True)["input_ids"])
        for line in lines
    )
    hidden = model.hidden_size
    a, b = torch.randn(2048, hidden), torch.randn(hidden, 4 * hidden)
    seconds = time_interleaved({"multiply": lambda: a @ b}, rounds=100)["multiply"]
    rate = 2 * 2048 * hidden * 4 * hidden / seconds
    ceiling = rate / flops_per_token / tokens * len(lines)
    print(
        f"{tokens:,} sub-tokens, {flops_per_token / 1e6:.1f} MFLOP a token in Linear layers; fp32 multiply "
        f"{rate / 1e9:.0f} GFLOP/s: the multiplies alone allow at most {ceiling:.0f} lines/s"
    )
    return ceiling


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--batch-sizes", default="32,128")
    args = parsed(parser, {"lines": 16, "batch_sizes": "8"})
    setup_threads()
    lines = quechua_lines(args.lines)
    words = sorted(len(line.split()) for line in lines)
    print(
        f"{len(lines):,} random lines of text/qu: {sum(words) / len(words):.1f} words on average, "
        f"median {words[len(words) // 2]}, longest {words[-1]}; threads {torch.get_num_threads()}"
    )
    cap = align.CPU_MAX_TOKENS
    ceiling = None
    for precision in PRECISIONS:
        tagging = tagger(precision)
        ceiling = ceiling or multiply_ceiling(tagging, lines)
        list(tagging.pipe(lines[:64]))  # warm-up
        rates = {}
        for batch_size in (int(size) for size in args.batch_sizes.split(",")):
            tagging.batch_size = batch_size
            for capped in (True, False):
                align.CPU_MAX_TOKENS = cap if capped else None
                start = time.perf_counter()
                done = sum(1 for _ in tagging.pipe(iter(lines)))
                rates[batch_size, capped] = done / (time.perf_counter() - start)
                print(
                    f"{precision} batch {batch_size:4d} {'capped' if capped else 'uncapped':9s} "
                    f"{rates[batch_size, capped]:7.1f} lines/s "
                    f"({rates[batch_size, capped] / ceiling:.0%} of the fp32 multiply ceiling)",
                    flush=True,
                )
        align.CPU_MAX_TOKENS = cap
        for batch_size in sorted({size for size, _ in rates}):
            print(
                f"{precision} batch {batch_size}: capped / uncapped {rates[batch_size, True] / rates[batch_size, False]:.2f}x"
            )


if __name__ == "__main__":
    main()
