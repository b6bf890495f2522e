"""`xling train-lang`: train a language adapter with masked-language modelling."""

from __future__ import annotations

import math
from dataclasses import replace

import torch
from rich.console import Console

from xling.adapters import AdaptedModel
from xling.adapters.heads import MaskedLMHead, MaskedLMHeadConfig
from xling.adapters.record import AdapterMetadata
from xling.adapters.saving import save
from xling.adapters.weights import read_weights
from xling.data.sources import data_name
from xling.data.text import read_text
from xling.errors import XlingError
from xling.given_data import in_memory
from xling.models import load_model, model_label, resolve_model_dir
from xling.pretrained import shipped_mlm_head
from xling.roles import LANG
from xling.train.mlm import MaskedLMObjective, check_window, pack_blocks, pretrained_mlm_head
from xling.train.progress import TrainingProgress
from xling.train.report import RunReport
from xling.train.run import start
from xling.train.text_config import DEFAULT_MLM_HEAD, LanguageAdapterOptions


def split_held_out(lines: list[str], share: float, seed: int) -> tuple[list[str], list[str]]:
    """(training lines, held-out lines): a seeded random `share` of the lines, at least one."""
    share = min(0.05, max(0.01, share))
    if len(lines) < 2:
        raise XlingError("the corpus needs at least two distinct lines (one is held out for perplexity)")
    count = max(1, round(share * len(lines)))
    order = torch.randperm(len(lines), generator=torch.Generator().manual_seed(seed)).tolist()
    held = set(order[:count])
    return [line for i, line in enumerate(lines) if i not in held], [line for i, line in enumerate(lines) if i in held]


def mlm_head(
    model: AdaptedModel,
    model_spec: str,
    choice: str = DEFAULT_MLM_HEAD,
    console: Console | None = None,
    trains_with: str = "the adapter",
) -> MaskedLMHead:
    """With `choice` pretrained, the checkpoint's own masked-LM head, else the one xling ships for the model
    (frozen unless the caller trains it); otherwise (or where there is neither) a new head to train, with
    `trains_with` in what it says.

    A new head's decoder is tied to the frozen input embeddings, so only its small
    transform and its output bias are trained, together with the adapter.
    """
    console = console or Console(stderr=True)
    embeddings = model.encoder.get_input_embeddings()
    state = None
    if choice == "pretrained":
        state = pretrained_mlm_head(resolve_model_dir(model_spec), model.config)
        if state is None and (shipped := shipped_mlm_head(model_label(model_spec))) is not None:
            state = read_weights(shipped)
            console.print(f"masked-LM head: xling's pretrained head for {model_label(model_spec)}")
        if state is None:
            console.print(
                f"masked-LM head: {model_spec} has no pretrained one, so a fresh head trains with {trains_with}"
            )
    config = MaskedLMHeadConfig(
        vocab_size=embeddings.num_embeddings,
        layer_norm_eps=getattr(model.config, model.family.norm_eps, 1e-12),
        from_checkpoint=state is not None,
    )
    head = MaskedLMHead(model.hidden_size, config, embeddings)
    if state is not None:
        head.load_state_dict({name: tensor.float() for name, tensor in state.items()})
    return head


def unigram_bias(head: MaskedLMHead, blocks: torch.Tensor, special_ids: list[int]) -> None:
    """Start a new head's output bias at the corpus's log unigram frequencies.

    Before any training the head then predicts like a unigram model of the language
    instead of uniformly over 250k pieces, so the first steps go to context, not counts.
    """
    counts = torch.bincount(blocks.flatten(), minlength=head.bias.numel()).double()
    counts[special_ids] = 0
    with torch.no_grad():
        head.bias.copy_(torch.log((counts + 0.01) / (counts.sum() + 0.01 * counts.numel())).float())


def train_language_adapter(
    options: LanguageAdapterOptions, console: Console | None = None, progress: TrainingProgress | None = None
) -> RunReport:
    """Train, save under the workspace, and return the report."""
    console, lang, workspace, run = start(options, LANG, console)
    name = run.target.name

    lines, files = read_text(options.corpus)
    if not lines:
        given = data_name(options.corpus) if in_memory(options.corpus) else ", ".join(options.corpus)
        raise XlingError(f"the corpus is empty: no text lines in {given}")
    train_lines, held_out_lines = split_held_out(lines, options.held_out, options.training.seed)
    encoder, tokenizer = load_model(options.model)  # a model folder refused before anything is said
    check_window(encoder, options.seq_len)
    console.print(f"corpus: {len(lines):,} lines from {len(files)} file(s); {len(held_out_lines):,} held out")
    train_blocks = pack_blocks(train_lines, tokenizer, options.seq_len, allow_partial=False)
    held_out_blocks = pack_blocks(held_out_lines, tokenizer, options.seq_len, allow_partial=True)

    torch.manual_seed(options.training.seed)  # the adapter's and head's initial weights follow the seed
    model = AdaptedModel(encoder)
    model.add_adapter(name, options.adapter.config)
    head = mlm_head(model, options.model, options.mlm_head, console)
    if not head.config.from_checkpoint:
        unigram_bias(head, train_blocks, tokenizer.all_special_ids)
    model.add_head(name, head)
    counts = model.train_adapter(name, train=[name])
    if head.config.from_checkpoint:
        head.requires_grad_(False)
        counts = model.parameter_count()
    objective = MaskedLMObjective(
        name,
        train_blocks,
        held_out_blocks,
        tokenizer,
        options.masking,
        options.training.seed,
        options.vocab_from_corpus,
    )
    console.print(
        f"training language adapter [bold]{name}[/] on {len(train_blocks):,} blocks of {options.seq_len}: {counts}"
        + (f"; softmax over {len(objective.vocab_ids):,} corpus pieces" if objective.vocab_ids is not None else "")
    )
    recorded = replace(options, lang=lang, corpus=[str(f) for f in files] or [data_name(options.corpus)])
    result = run.train(model, objective, recorded, counts, f"train-lang {name}", progress)
    evaluations = result.evaluations
    report = run.report(
        name=name,
        lang=lang,
        mlm_head="pretrained" if head.config.from_checkpoint else "fresh",
        model=options.model,
        corpus_files=[str(f) for f in files],
        lines={"train": len(train_lines), "held_out": len(held_out_lines)},
        tokens_seen=result.tokens,
        held_out_perplexity_before=evaluations[0].perplexity if evaluations else math.nan,
        held_out_perplexity_after=evaluations[-1].perplexity if evaluations else math.nan,
        vocab_from_corpus=options.vocab_from_corpus,
    )
    return run.save(
        report,
        lambda target, extra: save(
            model,
            name,
            target,
            overwrite=options.overwrite,
            metadata=AdapterMetadata(role=LANG.word),
            extra_files=extra,
        ),
    )
