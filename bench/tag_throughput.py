"""Tagging throughput (sentences per second) on the first 2,000 sentences of wikiann-en/dev.

Same embedded model, same head weights, batch 32, CPU:
- xling with Stack(lang, task): a MAD-X language adapter under a task adapter, in fp32, in
  bf16 (autocast; what `--precision auto` picks where bf16 runs faster) and in int8 (the
  Linear layers dynamically quantised, `--precision int8`);
- xling with no adapter active (the bare model plus the head), in the same three;
- the Transformers `pipeline("token-classification")` on the bare model plus the same head (fp32).

    python -m bench.tag_throughput [--sentences 2000] [--rounds 2]
"""

from __future__ import annotations

import argparse

import torch

from bench.common import corpora_root, parsed, setup_threads, time_interleaved
from xling.adapters import AdaptedModel, BottleneckConfig, Stack, TaggingHead, TaggingHeadConfig
from xling.data.conll import read_conll
from xling.data.labels import label_list
from xling.device import cpu_bf16_speedup
from xling.models import load_model, resolve_model_dir
from xling.tagging.tagger import Tagger

# bf16 wherever the CPU has bf16 units (elsewhere it is emulated, many times slower), also where auto picks fp32.
PRECISIONS = ("fp32", "bf16", "int8") if cpu_bf16_speedup() > 0 else ("fp32", "int8")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parsed(parser, {"sentences": 16, "rounds": 1})
    setup_threads()
    sentences = read_conll(corpora_root() / "ner" / "wikiann-en" / "dev")[: args.sentences]
    texts = [" ".join(s.tokens) for s in sentences]
    labels = label_list(sentences)

    def build():
        encoder, tokenizer = load_model("e5-small")
        model = AdaptedModel(encoder)
        torch.manual_seed(0)
        model.add_adapter("en", BottleneckConfig.preset("madx-lang"))
        model.add_adapter("ner", BottleneckConfig.preset("pfeiffer"))
        model.add_head("ner", TaggingHead(model.hidden_size, TaggingHeadConfig(labels=labels)))
        return model.eval(), tokenizer

    model, tokenizer = build()
    quantised, _ = build()  # the same weights; int8 replaces its Linear layers
    taggers = {
        f"xling {setup} {precision}": Tagger(
            quantised if precision == "int8" else model, tokenizer, "ner", active, args.batch_size, precision=precision
        )
        for precision in PRECISIONS
        for setup, active in (("Stack(lang, task)", Stack("en", "ner")), ("bare model + head", None))
    }

    from transformers import AutoModelForTokenClassification, pipeline

    hf_model = AutoModelForTokenClassification.from_pretrained(
        resolve_model_dir("e5-small"),
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    ).eval()
    with torch.no_grad():
        hf_model.classifier.weight.copy_(model.heads["ner"].classifier.weight)
        hf_model.classifier.bias.copy_(model.heads["ner"].classifier.bias)
    hf_pipeline = pipeline("token-classification", model=hf_model, tokenizer=tokenizer, device=-1)

    def run_xling(tagger):
        def run():
            tagger.model.set_active(tagger.setup)
            tagger.tag_texts(texts)

        return run

    def run_pipeline():
        list(hf_pipeline(texts, batch_size=args.batch_size))

    seconds = time_interleaved(
        {**{name: run_xling(tagger) for name, tagger in taggers.items()}, "transformers pipeline": run_pipeline},
        rounds=args.rounds,
    )
    rate = {name: len(texts) / s for name, s in seconds.items()}
    print(
        f"model e5-small, {len(texts):,} sentences of wikiann-en/dev, batch {args.batch_size}, threads {torch.get_num_threads()}"
    )
    for name, value in rate.items():
        print(f"{name:32s} {value:8.1f} sentences/s")
    for precision in PRECISIONS:
        stacked = rate[f"xling Stack(lang, task) {precision}"]
        overhead = rate[f"xling bare model + head {precision}"] / stacked - 1
        print(
            f"{precision}: adapter overhead over the bare model {100 * overhead:.1f}%; "
            f"Stack(lang, task) vs transformers pipeline {stacked / rate['transformers pipeline']:.2f}x"
        )


if __name__ == "__main__":
    main()
