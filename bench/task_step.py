"""Seconds per NER training step and peak memory: task adapter versus full fine-tuning.

Same model (the embedded default), same batch (16 sentences padded to 128 sub-tokens).
The adapter path trains a Pfeiffer task adapter (reduction 16) and its head on top of a
frozen MAD-X language adapter; full fine-tuning trains the whole encoder and the head,
through xling (set up as its training loop does) and on the plain Transformers path
(`AutoModelForTokenClassification`, as Transformers loads it). Each path runs in fp32 and
under bf16 autocast (what `--precision auto` picks where bf16 runs faster; trained weights
and losses stay fp32, xling stores frozen ones in bf16). Times are measured in one process,
interleaved; peak memory is the resident set of a fresh process per path, sampled while it
trains.

    python -m bench.task_step [--rounds 5] [--batch 16] [--seq 128] [--methods adapter,full,plain]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import torch

from bench.common import corpora_root, parsed, setup_threads, time_interleaved, train_as_xling, training_step
from xling.adapters import AdaptedModel, BottleneckConfig, Stack, TaggingHead, TaggingHeadConfig
from xling.data.conll import read_conll
from xling.data.labels import label_list
from xling.models import load_model, resolve_model_dir
from xling.tagging.align import window_labels, windows_for
from xling.train.config import TaskAdapterOptions

METHODS = {"adapter": "task adapter", "full": "full fine-tuning", "plain": "plain full fine-tuning"}


def batch_tensors(tokenizer, labels, batch: int, seq: int):
    sentences = read_conll(corpora_root() / "ner" / "conll2002-es" / "train")[:batch]
    label_ids = {label: i for i, label in enumerate(labels)}
    windows = windows_for([s.tokens for s in sentences], tokenizer, seq, 32)[:batch]
    ids = torch.full((batch, seq), tokenizer.pad_token_id)
    targets = torch.full((batch, seq), -100)
    for row, window in enumerate(windows):
        ids[row, : len(window.input_ids)] = torch.tensor(window.input_ids)
        tags = [t if t in label_ids else "O" for t in sentences[window.sentence].tags]
        targets[row, : len(window.input_ids)] = torch.tensor(window_labels(window, tags, label_ids))
    return ids, (ids != tokenizer.pad_token_id).long(), targets


def step_fn(method: str, precision: str, size: tuple[int, int]):
    encoder, tokenizer = load_model("e5-small")
    labels = label_list(read_conll(corpora_root() / "ner" / "wikiann-en" / "dev"))
    batch = batch_tensors(tokenizer, labels, *size)
    if method == "plain":  # full fine-tuning on the plain Transformers path, no xling
        from transformers import AutoModelForTokenClassification

        plain = AutoModelForTokenClassification.from_pretrained(resolve_model_dir("e5-small"), num_labels=len(labels))
        plain.train()
        params = [p for p in plain.parameters() if p.requires_grad]
        return training_step(lambda i, m: plain(input_ids=i, attention_mask=m).logits, params, *batch, precision)
    model = AdaptedModel(encoder)
    model.add_head("ner", TaggingHead(model.hidden_size, TaggingHeadConfig(labels=labels)))
    if method == "adapter":
        model.add_adapter("en", BottleneckConfig.preset("madx-lang"))
        model.add_adapter("ner", BottleneckConfig.preset("pfeiffer"))
        model.train_adapter(Stack("en", "ner"), train=["ner"])
    train_as_xling(model, precision, TaskAdapterOptions)  # the encoder trains too in full fine-tuning
    params = [p for p in model.parameters() if p.requires_grad]
    forward = lambda i, m: model.heads["ner"](model(input_ids=i, attention_mask=m))  # noqa: E731
    return training_step(forward, params, *batch, precision)


def peak_memory(method: str, precision: str, size: tuple[int, int]) -> float:
    """GB of peak resident memory while a fresh process trains 3 steps of `method` (sampled every 5 ms)."""
    code = (
        "import json, threading, time, psutil; from bench.task_step import step_fn; "
        f"step, _ = step_fn({method!r}, {precision!r}, {size!r}); "
        "process = psutil.Process(); peak = [process.memory_info().rss]; done = []\n"
        "def sample():\n"
        "    while not done:\n"
        "        peak[0] = max(peak[0], process.memory_info().rss); time.sleep(0.005)\n"
        "sampler = threading.Thread(target=sample); sampler.start(); [step() for _ in range(3)]; done.append(1); sampler.join(); "
        "print(json.dumps(peak[0]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1]) / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--precisions", default="fp32,bf16")
    args = parsed(parser, {"rounds": 1, "batch": 2, "seq": 32, "methods": "adapter,plain", "precisions": "fp32"})
    setup_threads()
    size, precisions = (args.batch, args.seq), args.precisions.split(",")
    paths = {
        f"{METHODS[method]} {precision}": (method, precision)
        for precision in precisions
        for method in args.methods.split(",")
    }
    steps = {name: step_fn(*path, size) for name, path in paths.items()}
    times = time_interleaved({name: step for name, (step, _) in steps.items()}, args.rounds)
    memory = {name: peak_memory(*path, size) for name, path in paths.items()}
    print(f"model e5-small, batch {args.batch} x {args.seq}, threads {torch.get_num_threads()}")
    for name in times:
        print(f"{name:29s} {times[name]:6.3f} s/step  {memory[name]:5.2f} GB peak  {steps[name][1]:>12,} trainable")
    ratio = lambda a, b: f"{times[a] / times[b]:.2f}" if a in times and b in times else "not measured"  # noqa: E731
    for precision in precisions:
        adapter, full = f"task adapter {precision}", f"full fine-tuning {precision}"
        if adapter in memory and full in memory:
            print(
                f"{precision}: adapter / full: time {ratio(adapter, full)}, memory {memory[adapter] / memory[full]:.2f}"
            )
        print(f"{precision}: xling full fine-tuning / plain: time {ratio(full, f'plain full fine-tuning {precision}')}")
    print(f"task adapter bf16 / fp32: time {ratio('task adapter bf16', 'task adapter fp32')}")


if __name__ == "__main__":
    main()
