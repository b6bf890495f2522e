"""xling on the side-by-side benchmark's workload (`../shared/anchor-bench`), through xling's own training interface.

The shared benchmark compares the AdapterHub `adapters` library (its `madx_adapters.py`) with xling on the
same model files, data, batches, seed and threads. Its xling side drives the training objectives directly,
so it follows one version of their interface; this script drives the current one (`objective.prepare`, then
`objective.loss`, as xling's training loop does) on the same workload, reusing the benchmark's own data
readers, batch order and statistics, and writes a result file with the same `summary` keys, so the
benchmark's `compare_results.py` puts it beside the library's. `--precision bf16` / `int8` time the variants
(int8: tagging only).

    bash ../shared/anchor-bench/setup.sh                # once: the library's environment, model files, data
    python -m bench.anchor_workload                     # about 11 minutes (XLING_ANCHOR_BENCH: another folder)
    python ../shared/anchor-bench/compare_results.py LIBRARY.json XLING.json   # beside the library's result

Timed per step, as the benchmark: building the batch tensors (masking, padding, labels), forward, loss,
backward, AdamW step (constant learning rate, no clipping, weight decay 0).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import torch

from bench.common import REPO, missing, train_as_xling
from xling.adapters import AdaptedModel, BottleneckConfig, Stack, TaggingHead, TaggingHeadConfig
from xling.adapters.record import AdapterMetadata
from xling.adapters.saving import load, save
from xling.data.conll import read_conll
from xling.data.labels import IGNORE
from xling.device import autocast, bound_kernel_cache, pick_precision
from xling.methods import METHODS
from xling.models import load_model, resolve_model_dir
from xling.models.stored_weights import linear_weights_stored_for
from xling.provenance import made_where
from xling.roles import LANG, TASK
from xling.tagging.align import Window, length_batches, windows_for
from xling.tagging.predict import max_window, pad_batch
from xling.tagging.tagger import Tagger
from xling.train.config import MaskingConfig, TaskAdapterOptions
from xling.train.language import mlm_head, unigram_bias
from xling.train.loop import make_optimizer
from xling.train.mlm import MaskedLMObjective
from xling.train.task import _train_without_adapters
from xling.train.text_config import LanguageAdapterOptions
from xling.train.token_classification import TaggingObjective
from xling.trained_tasks import TaskRecord, save_task
from xling.workspace import Workspace

PHASES = ["lang_qu", "lang_qu_vocab", "lang_en", "lang_en_vocab", "ner_adapter", "full_ft", "infer_adapters"]
NER = "ner-en"
ANCHOR = Path(os.environ.get("XLING_ANCHOR_BENCH", REPO.parent / "shared" / "anchor-bench"))


def anchor_module(directory: Path):
    """The benchmark's helpers (data readers, `Cycler`, labels, statistics, memory), from its own folder; None
    where it is not there (`--help` still answers)."""
    if not (directory / "madx_adapters.py").is_file():
        return None
    sys.path.insert(0, str(directory))
    import madx_adapters

    return madx_adapters


def parse_args(anchor):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precision", default="auto", help="auto, fp32, bf16 (training and tagging) or int8 (tagging)")
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--phase-out", help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="the smallest real run, as the tests run it: every phase, "
                        "2 steps, 64 sentences tagged, in a temporary folder")  # fmt: skip
    args, rest = parser.parse_known_args()
    if anchor is None:
        missing(f"the side-by-side benchmark's folder (not at {ANCHOR}; XLING_ANCHOR_BENCH names another)")
    if args.smoke:  # each phase's process parses the same arguments: the same folder, made once
        smoke = Path(anchor.TMP) / "xling-smoke" / "anchor"
        rest += ["--steps", "2", "--warmup", "1", "--repeats", "1", "--infer-sentences", "64"]
        rest += ["--out-dir", str(smoke / "results"), "--work-dir", str(smoke / "work")]
    # the benchmark's own options and defaults (data, batch sizes, learning rates, steps, repeats); the model
    # files, work and result folders as its run.sh gives them to xling
    defaults = [
        "--model",
        str(resolve_model_dir("e5-small")),
        "--out-dir",
        os.path.join(anchor.TMP, "anchor-bench-results"),
        "--work-dir",
        os.path.join(anchor.TMP, "anchor", "xling-work"),
    ]
    parsed = argparse.Namespace(**{**vars(anchor.parse_args(defaults + rest)), **vars(args)})
    if not Path(parsed.conll_dir).is_dir():
        missing(f"the benchmark's data ({parsed.conll_dir}): bash ../shared/anchor-bench/setup.sh")
    return parsed


def trainable(model: AdaptedModel) -> dict:
    by, total, count = {"adapters": 0, "invertible_adapters": 0, "heads": 0, "base_model": 0}, 0, 0
    for name, param in model.named_parameters():
        total += param.numel()
        if param.requires_grad:
            count += param.numel()
            part = (
                "invertible_adapters"
                if ".invertible." in name
                else "adapters"
                if name.startswith("adapters.")
                else "heads"
                if name.startswith("heads.")
                else "base_model"
            )
            by[part] += param.numel()
    return {"total": total, "trainable": count, "trainable_breakdown": by}


def train_steps(anchor, model, objective, next_batch, lr, args, options) -> list[dict]:
    """`repeats` measurements of `steps` steps each, the first `warmup` of each left out (the benchmark's rule),
    as xling's training loop runs them: its optimiser, training mode (`options`, the command's defaults) and
    attention."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = make_optimizer(params, lr)
    precision = pick_precision("fp32" if args.precision == "int8" else args.precision, "cpu")
    train_as_xling(model, precision, options)
    repeats, step = [], 0
    for repeat in range(args.repeats):
        times, losses = [], []
        for _ in range(args.steps):
            batch = next_batch()
            start = time.perf_counter()
            tensors = objective.prepare(batch, step)
            labelled = int((tensors["labels"] != IGNORE).sum())
            with autocast("cpu", precision):
                loss = objective.loss(model, tensors, 1 / max(1, labelled))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - start)
            losses.append(float(loss.detach()))
            step += 1
        stats = anchor._stats(times[args.warmup :] if args.steps > args.warmup else times)
        repeats.append(
            {
                "repeat": repeat + 1,
                "s_per_step_mean": stats["mean"],
                "s_per_step": stats,
                "loss_first": losses[0],
                "loss_last": losses[-1],
                "precision": precision,
            }
        )
        anchor.log(
            f"  repeat {repeat + 1}: {stats['mean']:.4f} s/step ({precision}), loss {losses[0]:.3f} -> "
            f"{losses[-1]:.3f}, peak RSS {anchor.peak_rss_mb():.0f} MB"
        )
    return repeats


def phase_lang(anchor, args, lang: str, vocab_from_corpus: bool) -> dict:
    encoder, tokenizer = load_model(args.model)
    files = args.qu_html if lang == "qu" else [os.path.join(args.conll_dir, "train.txt")]
    lines = anchor.read_udhr(files) if lang == "qu" else [" ".join(t) for t, _ in anchor.read_conll(files[0])]
    blocks, _ = anchor.mlm_blocks(tokenizer, lines, args.max_length)  # the benchmark's packing
    blocks = torch.tensor([b["input_ids"] for b in blocks], dtype=torch.long)
    torch.manual_seed(args.seed)
    model = AdaptedModel(encoder)
    model.add_adapter(lang, BottleneckConfig.preset("madx-lang", reduction_factor=args.lang_reduction))
    head = mlm_head(model, args.model)
    if not head.config.from_checkpoint:
        unigram_bias(head, blocks, tokenizer.all_special_ids)
    model.add_head(lang, head)
    model.train_adapter(lang, train=[lang])
    objective = MaskedLMObjective(
        lang, blocks, blocks[:0], tokenizer, MaskingConfig(args.mlm_probability), args.seed, vocab_from_corpus
    )
    next_batch = anchor.Cycler(
        list(range(len(blocks))), args.lang_batch, lambda i: {"index": torch.tensor(i)}, args.seed
    )
    repeats = train_steps(anchor, model, objective, next_batch, args.lang_lr, args, LanguageAdapterOptions)
    if not vocab_from_corpus:  # the tagging phase stacks it
        where = Workspace(args.work_dir, args.model).adapter_dir(LANG, lang)
        save(model, lang, where, True, AdapterMetadata(role=LANG.word))
    return {"blocks": len(blocks), "repeats": repeats, "params": trainable(model), "peak_rss_mb": anchor.peak_rss_mb()}


def phase_ner(anchor, args, method: str) -> dict:
    sentences = read_conll(Path(args.conll_dir) / "train.txt")
    random.Random(args.seed).shuffle(sentences)  # the benchmark's order
    sentences = sentences[: args.repeats * args.steps * args.ner_batch]
    workspace = Workspace(args.work_dir, args.model)
    torch.manual_seed(args.seed)
    encoder, tokenizer = load_model(args.model, words_tokenizer=True)  # as `train-task` loads it
    model = AdaptedModel(encoder)
    model.add_head(NER, TaggingHead(model.hidden_size, TaggingHeadConfig(labels=list(anchor.LABELS))))
    lang_dir = workspace.adapter_dir(LANG, "en")
    if method == "adapter":
        model.add_adapter(NER, BottleneckConfig.preset("pfeiffer", reduction_factor=args.ner_reduction))
        model.train_adapter(Stack(load(model, lang_dir, name="lang-en", head=False), NER), train=[NER])
    else:
        _train_without_adapters(model, NER, METHODS["full"])
    objective = TaggingObjective(NER, sentences, [], tokenizer, model, args.seed, max_len=args.max_length)
    windows_of = collections.defaultdict(list)
    for index, window in enumerate(objective.windows):
        windows_of[window.sentence].append(index)
    next_batch = anchor.Cycler(
        list(range(len(sentences))),
        args.ner_batch,
        lambda chosen: {"windows": [w for s in chosen for w in windows_of[s]], "group": 0},
        args.seed,
        shuffle=False,
    )
    lr = args.ner_lr if method == "adapter" else args.ft_lr
    repeats = train_steps(anchor, model, objective, next_batch, lr, args, TaskAdapterOptions)
    if method == "adapter":  # for the tagging phase, as `train-task` saves it
        record = TaskRecord(NER, "ner", "en", "adapter", str(lang_dir), list(anchor.LABELS))
        save_task(model, tokenizer, record, workspace.adapter_dir(TASK, NER), True, {})
    return {"repeats": repeats, "params": trainable(model), "peak_rss_mb": anchor.peak_rss_mb()}


def phase_infer(anchor, args) -> dict:
    """Stack(qu, ner-en) against no adapter active, on the benchmark's batches (file order, truncated, batch 32),
    on xling's length-sorted windows, and through `Tagger.tag_words` end to end."""
    tagger = Tagger.load(
        lang="qu",
        task="ner",
        model=args.model,
        workspace=args.work_dir,
        device="cpu",
        batch_size=args.infer_batch,
        precision=args.precision,
    )
    model, head, tokenizer = tagger.model, tagger.model.heads[tagger.head], tagger.tokenizer
    words = [s.tokens for s in read_conll(Path(args.conll_dir) / "test.txt")[: args.infer_sentences]]
    ids = [truncated(row, args.max_length) for row in tokenizer(words, is_split_into_words=True)["input_ids"]]
    rows = [Window(i, row, []) for i, row in enumerate(ids)]
    pad, size = tokenizer.pad_token_id, args.infer_batch
    file_order = [pad_batch(rows[i : i + size], pad, "cpu") for i in range(0, len(rows), size)]
    windows = windows_for(words, tokenizer, max_window(model, tokenizer, args.max_length), 32)
    sorted_batches = [pad_batch([windows[i] for i in b], pad, "cpu") for b in length_batches(windows, size)]

    def rate(batches) -> float:
        start = time.perf_counter()
        # as the tagger computes: under autocast, the Linear weights stored in its precision
        with linear_weights_stored_for(model, tagger.computed_in, tagger.stored_weights):
            with autocast("cpu", tagger.computed_in):
                for input_ids, mask in batches:
                    head(model(input_ids=input_ids, attention_mask=mask))
        return len(words) / (time.perf_counter() - start)

    def end_to_end() -> float:
        start = time.perf_counter()
        tagger.tag_words(words)
        return len(words) / (time.perf_counter() - start)

    runs, sorted_runs, e2e = ({"stack_qu_ner": [], "bare_no_adapters": []} for _ in range(3))
    with torch.inference_mode():
        for repeat in range(args.repeats):  # interleaved, each after a warm-up batch
            for name, setup in (("stack_qu_ner", tagger.setup), ("bare_no_adapters", None)):
                model.set_active(setup)
                rate(file_order[:1])
                runs[name].append({"sentences_per_s": rate(file_order), "repeat": repeat + 1})
                sorted_runs[name].append({"sentences_per_s": rate(sorted_batches), "repeat": repeat + 1})
                e2e[name].append({"sentences_per_s": end_to_end(), "repeat": repeat + 1})
                anchor.log(
                    f"  {name} repeat {repeat + 1}: {runs[name][-1]['sentences_per_s']:.1f} sent/s "
                    f"(benchmark batches), {sorted_runs[name][-1]['sentences_per_s']:.1f} (length-sorted), "
                    f"{e2e[name][-1]['sentences_per_s']:.1f} (Tagger end to end), {tagger.computed_in}"
                )
    ratio = [
        b["sentences_per_s"] / s["sentences_per_s"] for s, b in zip(runs["stack_qu_ner"], runs["bare_no_adapters"])
    ]
    return {
        "runs": runs,
        "runs_xling_length_sorted": sorted_runs,
        "runs_tag_words_end_to_end": e2e,
        "overhead_ratio_bare_over_stack": ratio,
        "precision": tagger.computed_in,
        "encoder": type(model.encoder).__name__,
        "tokens_total": sum(map(len, ids)),  # the library's `data.nonpad_tokens_total`: the same ids
        "peak_rss_mb": anchor.peak_rss_mb(),
    }


def truncated(row: list[int], length: int) -> list[int]:
    """A sentence's ids cut as Transformers' `truncation=True` cuts them: its first pieces and the end token (the
    embedded model's tokenizer in xling, which tagging never truncates, takes no such option)."""
    return row if len(row) <= length else [*row[: length - 1], row[-1]]


def run_phase(anchor, args, name: str) -> dict:
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if name != "infer_adapters":  # as a training command bounds it, before the first kernel (Tagger.load its own)
        bound_kernel_cache("training")
    if name.startswith("lang_"):
        return phase_lang(anchor, args, name[5:7], name.endswith("_vocab"))
    if name in ("ner_adapter", "full_ft"):
        return phase_ner(anchor, args, "adapter" if name == "ner_adapter" else "full")
    return phase_infer(anchor, args)


def main():
    anchor = anchor_module(ANCHOR)
    args = parse_args(anchor)
    if args.phase:
        Path(args.phase_out).write_text(json.dumps(run_phase(anchor, args, args.phase)))
        return
    phases = [p for p in args.phases.split(",") if p]
    if any(p not in PHASES for p in phases):
        raise SystemExit(f"unknown phase in {phases}; known: {', '.join(PHASES)}")
    logs = Path(args.work_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    results = {}
    for name in phases:  # each in a fresh process: peak memory per phase
        anchor.log(f"=== phase {name}")
        out = logs / f"{stamp}-{name}.json"
        command = [
            sys.executable,
            "-m",
            "bench.anchor_workload",
            *sys.argv[1:],
            "--phase",
            name,
            "--phase-out",
            str(out),
        ]
        code = subprocess.run(command, cwd=REPO).returncode
        results[name] = json.loads(out.read_text()) if code == 0 else {"error": f"phase exited with code {code}"}
    summary = anchor.summarize(results)
    for name in ("lang_qu_vocab", "lang_en_vocab"):
        if "repeats" in results.get(name, {}):
            summary[name] = anchor.summarize({name[:7]: results[name]})[name[:7]]
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    tag = f"xling {args.precision} {commit[:7]}"
    import transformers

    versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    result = {"tag": tag, "timestamp": stamp, "precision": args.precision, **made_where(), **versions}
    result |= {"phases": results, "summary": summary}
    path = Path(args.out_dir) / f"xling-results-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(json.dumps(summary, indent=2))
    print(f"written: {path}")


if __name__ == "__main__":
    main()
