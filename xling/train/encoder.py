"""`xling train-encoder`: adapt the encoder itself by continued masked-LM training, then use it as `-m`.

For a language an encoder barely knows, continued masked-LM training of the whole encoder on its text beat
adapters (Ebrahimi & Kann 2021); mixing in the source languages keeps what the encoder knows of them (MAFT,
Alabi et al. 2022). The encoder trains with its masked-LM head (the checkpoint's own, or the one xling ships
for the embedded model), on a mix of sources drawn by a temperature (`BlockMix`): the language's text, other
languages' text (`--also`) and translation pairs (`--parallel`, translation language modelling). The result is a
model folder in the workspace, `<workspace>/<model>/encoder/<name>/`, with a card and the run's report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from rich.console import Console
from torch import nn
from torch.nn.utils import parametrize

from xling.adapters import AdaptedModel
from xling.data.fingerprints import lines_holding
from xling.data.overlap import sentences_of
from xling.data.text import parallel_files, read_parallel, read_text
from xling.errors import XlingError
from xling.models import load_model
from xling.models.embedded import embedded_identity
from xling.models.folders import write_model_folder
from xling.models.loading import ModelSpec
from xling.provenance import source_commit
from xling.roles import ENCODER
from xling.train.cards.encoder import encoder_card
from xling.train.language import mlm_head, split_held_out, unigram_bias
from xling.train.log_lines import Evaluation
from xling.train.mlm import BlockMix, MaskedLMObjective, check_window, pack_blocks, pack_pairs, temperature_shares
from xling.train.progress import TrainingProgress
from xling.train.report import MixedSource, Resolved, RunReport
from xling.train.run import start
from xling.train.text_config import EncoderOptions, mixed_sources


@dataclass
class Source:
    """One source of the mix: a language's text, or translation pairs (named `es-qu`)."""

    name: str
    data: list[str]  # as given: files, folders, corpus:NAME
    files: list[str]
    train: list  # lines, or (source, target) pairs
    held_out: list[str]
    left_out: int  # lines or pairs that held a sentence of `--exclude`
    parallel: bool = False


def read_sources(options: EncoderOptions, lang: str) -> list[Source]:
    """The language's text, each `--also` language's and the translation pairs, without a line that holds a
    sentence of `--exclude`, each text with its held-out share."""
    excluded = [sentence.tokens for reference in options.exclude for sentence in sentences_of(reference)]
    corpora: dict[str, list[str]] = {lang: list(options.corpus)}
    for other, corpus in mixed_sources(options.also):
        if other == lang:
            raise XlingError(f"--also {other}=...: {lang} is the corpus's own language; give its text as CORPUS")
        corpora.setdefault(other, []).append(corpus)
    sources = []
    for code, corpus in corpora.items():
        lines, files = read_text(corpus)
        held = lines_holding(lines, excluded)
        kept = [line for i, line in enumerate(lines) if i not in held]
        if len(kept) < 2:
            raise XlingError(f"the {code} text ({', '.join(corpus)}) needs at least two lines to train on")
        train, held_out = split_held_out(kept, options.held_out, options.training.seed)
        sources.append(Source(code, corpus, [str(f) for f in files], train, held_out, len(held)))
    if options.parallel:
        files = parallel_files(options.parallel, options.parallel_lang, lang)
        pairs = list(dict.fromkeys(pair for a, b in files for pair in read_parallel(a, b)))
        held = lines_holding([a for a, _ in pairs], excluded) | lines_holding([b for _, b in pairs], excluded)
        kept = [pair for i, pair in enumerate(pairs) if i not in held]
        if not kept:
            raise XlingError(f"no translation pair of {', '.join(options.parallel)} is left to train on")
        names = [str(f) for pair in files for f in pair]
        name = f"{options.parallel_lang}-{lang}"
        sources.append(Source(name, options.parallel, names, kept, [], len(held), parallel=True))
    return sources


class LowRankUpdate(nn.Module):
    """A Linear layer's weight W as W + (alpha / rank) B A (LoRA, Hu et al. 2021), alpha twice the rank: A starts
    Kaiming-uniform and B at zero, so training starts from W. A parametrisation, so merging it is torch's own."""

    def __init__(self, linear: nn.Linear, rank: int):
        super().__init__()
        self.down = nn.Parameter(torch.empty(rank, linear.in_features))
        nn.init.kaiming_uniform_(self.down, a=math.sqrt(5))
        self.up = nn.Parameter(torch.zeros(linear.out_features, rank))

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return weight + 2.0 * (self.up @ self.down).to(weight.dtype)


def set_trainable(model: AdaptedModel, head: nn.Module, options: EncoderOptions):
    """What `--method` trains, with the masked-LM head always: every weight, all but the word embeddings, or a
    low-rank update and the bias of every Linear layer."""
    model.requires_grad_(False)
    head.requires_grad_(True)
    if options.method == "lora":
        for module in list(model.encoder.modules()):
            if isinstance(module, nn.Linear):
                parametrize.register_parametrization(module, "weight", LowRankUpdate(module, options.lora_rank))
                module.parametrizations.weight.original.requires_grad_(False)
                if module.bias is not None:  # trained, so never stored in bf16 as frozen weights are
                    module.bias.requires_grad_(True)
    else:
        model.encoder.requires_grad_(True)
        if options.method == "no-embeddings":
            model.encoder.get_input_embeddings().requires_grad_(False)
    return model.parameter_count()


def merge_updates(encoder: nn.Module) -> None:
    """Each low-rank update added into its weight for good: the folder holds a plain encoder."""
    for module in encoder.modules():
        if parametrize.is_parametrized(module, "weight"):
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)


def build_mix(sources: list[Source], tokenizer, options: EncoderOptions) -> tuple[BlockMix, dict[str, float]]:
    blocks = {
        source.name: pack_pairs(source.train, tokenizer, options.seq_len)
        if source.parallel
        else pack_blocks(source.train, tokenizer, options.seq_len, allow_partial=False)
        for source in sources
    }
    shares = temperature_shares({name: len(b) for name, b in blocks.items()}, options.temperature)
    return BlockMix(blocks, shares), shares


def train_encoder(
    options: EncoderOptions, console: Console | None = None, progress: TrainingProgress | None = None
) -> RunReport:
    """Adapt the encoder, save it as a model folder under the workspace, and return the report."""
    console, lang, workspace, run = start(options, ENCODER, console)
    name = run.target.name
    sources = read_sources(options, lang)
    encoder, tokenizer = load_model(options.model)
    check_window(encoder, options.seq_len)
    if options.method == "lora" and options.lora_rank > encoder.config.hidden_size:  # before any update is made
        raise XlingError(
            f"--lora-rank {options.lora_rank} is above the model's hidden size {encoder.config.hidden_size}"
        )
    mix, shares = build_mix(sources, tokenizer, options)
    held_out = {
        s.name: pack_blocks(s.held_out, tokenizer, options.seq_len, allow_partial=True)
        for s in sources[1:]
        if not s.parallel
    }
    torch.manual_seed(options.training.seed)
    model = AdaptedModel(encoder)
    head = mlm_head(model, options.model, "pretrained", console, trains_with="the encoder")
    if not head.config.from_checkpoint:
        unigram_bias(head, mix.blocks, tokenizer.all_special_ids)
    model.add_head(name, head)
    counts = set_trainable(model, head, options)
    objective = MaskedLMObjective(
        name,
        mix,
        pack_blocks(sources[0].held_out, tokenizer, options.seq_len, allow_partial=True),
        tokenizer,
        options.masking,
        options.training.seed,
        options.vocab_from_corpus,
        other_held_out=held_out,
    )
    mixed = ", ".join(f"{n} {100 * shares[n]:.0f}% ({size:,} blocks)" for n, size in zip(mix.names, mix.sizes))
    console.print(f"adapting the encoder ({options.method}) on {mixed}: {counts}")
    resolved = Resolved(sources=[{"name": s.name, "files": s.files} for s in sources])
    recorded = replace(options, training=replace(options.training, learning_rate=options.learning_rate))
    result = run.train(model, objective, recorded, counts, name, progress, resolved)
    described = encoder_record(options, sources, mix, shares) | perplexities(result.evaluations, lang)
    report = run.report(name=name, lang=lang, **described)
    merge_updates(model.encoder)
    head_state = {key: value.float() for key, value in head.state_dict().items()}
    return run.save(
        report,
        lambda folder, extra: write_model_folder(encoder, tokenizer, head_state, folder, options.overwrite, extra),
        card=encoder_card,
    )


def encoder_record(options: EncoderOptions, sources: list[Source], mix: BlockMix, shares: dict[str, float]) -> dict:
    """What the report says of the base model and the mix, beside what every run's report says."""
    return {
        "model": options.model,
        "base_model": embedded_identity() if ModelSpec.parse(options.model).kind == "embedded" else options.model,
        "method": options.method,
        "temperature": options.temperature,
        "mix": [
            MixedSource(
                name=source.name,
                translation_pairs=source.parallel,
                data=source.data,
                files=source.files,
                train=len(source.train),
                held_out=len(source.held_out),
                left_out=source.left_out,
                blocks=size,
                share=round(shares[source.name], 4),
            )
            for source, size in zip(sources, mix.sizes)
        ],
        "commit": source_commit(),
    }


def perplexities(evaluations: list[Evaluation], lang: str) -> dict:
    """Each language's held-out perplexity before and after training (`perplexity` is `lang`'s)."""
    if not evaluations:
        return {}
    first, last = evaluations[0].metrics, evaluations[-1].metrics
    keys = [key for key in first if key.startswith("perplexity")]
    return {
        "held_out_perplexity": {
            key.removeprefix("perplexity").lstrip("_") or lang: {"before": first[key], "after": last[key]}
            for key in keys
        }
    }
