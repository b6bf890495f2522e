"""Training the masked-LM head an encoder lacks (the embedded one has none): the encoder stays frozen and carries
no adapter; only the head trains, its transform (dense layer and LayerNorm) and its output bias, the decoder tied
to the word embeddings, over text of several languages. `python -m xling.shipping.head` trains it with
`HeadRecipe` and ships it inside xling."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import save_file

from xling.adapters import AdaptedModel
from xling.adapters.heads import MaskedLMHead, MaskedLMHeadConfig
from xling.data.text import read_text
from xling.device import autocast
from xling.fileio import write_json_atomic
from xling.models import load_model
from xling.models.loading import DEFAULT_MODEL
from xling.pretrained import MLM_HEAD_FILE
from xling.provenance import made_where
from xling.records import Record
from xling.train.config import MaskingConfig, TrainConfig
from xling.train.language import split_held_out, unigram_bias
from xling.train.loop import train
from xling.train.mlm import MaskedLMObjective, pack_blocks

HEAD_NAME = "mlm"  # the head in the model, and its folder among the shipped ones
REPORT_FILE = "report.json"


@dataclass
class HeadRecipe:
    """What the shipped head is trained on and how. Quechua comes first: the head is for its language adapter."""

    corpora: dict[str, str] = field(
        default_factory=lambda: {
            "qu": "corpus:quechua-text",
            "es": "corpus:conll2002-es/train",
            "en": "corpus:wikiann-en/train",
        }
    )
    steps: int = 1000
    batch_size: int = 32
    learning_rate: float = 1e-3  # only a transform and a bias train, from scratch: a larger step than an adapter's
    seq_len: int = 128
    held_out: float = 0.02
    eval_blocks_per_language: int = 21  # 63 blocks: the objective evaluates at most 64
    eval_every: int = 100
    seed: int = 1
    model: str = DEFAULT_MODEL
    device: str = "auto"
    precision: str = "auto"


@dataclass
class HeadReport(Record):
    """The trained head's `report.json` in its work folder: where and from what recipe it was made, its blocks,
    held-out perplexity per language, evaluations and time."""

    xling_version: str
    commit: str | None
    machine: str
    recipe: HeadRecipe
    blocks: dict[str, dict[str, int]]  # per language: training and held-out blocks
    held_out_perplexity: dict[str, float]
    evaluations: list[dict]
    training_seconds: float
    computed_in: str


def language_blocks(recipe: HeadRecipe, tokenizer) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Per language: (training blocks, held-out blocks), lines held out as a language adapter holds them out."""
    blocks = {}
    for lang, source in recipe.corpora.items():
        lines, _ = read_text([source])
        kept, held = split_held_out(lines, recipe.held_out, recipe.seed)
        blocks[lang] = (
            pack_blocks(kept, tokenizer, recipe.seq_len, allow_partial=False),
            pack_blocks(held, tokenizer, recipe.seq_len, allow_partial=True),
        )
    return blocks


def head_state(head: MaskedLMHead) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().float().cpu().contiguous() for name, tensor in head.state_dict().items()}


def train_head(workdir: Path, recipe: HeadRecipe) -> HeadReport:
    """Train the head in `workdir` (resumable), write its fp32 weights and `report.json` there, return the report;
    a head that `workdir` holds already from the same recipe is not trained again."""
    done = workdir / REPORT_FILE
    if done.is_file() and (workdir / MLM_HEAD_FILE).is_file() and (report := HeadReport.read(done)).recipe == recipe:
        return report
    workdir.mkdir(parents=True, exist_ok=True)
    encoder, tokenizer = load_model(recipe.model)
    blocks = language_blocks(recipe, tokenizer)
    train_blocks = torch.cat([kept for kept, _ in blocks.values()])
    held = torch.cat([held[: recipe.eval_blocks_per_language] for _, held in blocks.values()])
    torch.manual_seed(recipe.seed)
    model = AdaptedModel(encoder)
    embeddings = encoder.get_input_embeddings()
    config = MaskedLMHeadConfig(embeddings.num_embeddings, getattr(model.config, model.family.norm_eps))
    head = MaskedLMHead(model.hidden_size, config, embeddings)
    unigram_bias(head, train_blocks, tokenizer.all_special_ids)
    model.add_head(HEAD_NAME, head)
    model.train_adapter(None, train=[HEAD_NAME])
    masking = MaskingConfig()
    objective = MaskedLMObjective(
        HEAD_NAME, train_blocks, held, tokenizer, masking, recipe.seed, vocab_from_corpus=True
    )
    training = TrainConfig(
        max_steps=recipe.steps,
        batch_size=recipe.batch_size,
        learning_rate=recipe.learning_rate,
        eval_every=recipe.eval_every,
        seed=recipe.seed,
        device=recipe.device,
        precision=recipe.precision,
    )
    result = train(model, objective, training, workdir / "run", {"recipe": asdict(recipe)}, "masked-LM head")
    model.eval()
    perplexity = {}
    # the frozen weights are stored in the precision the run computed in (bf16 on a CPU with bf16 units)
    with autocast(next(model.parameters()).device.type, result.precision):
        for lang, (_, held_out) in blocks.items():
            alone = MaskedLMObjective(HEAD_NAME, train_blocks[:1], held_out, tokenizer, masking, recipe.seed)
            perplexity[lang] = round(alone.perplexity(model), 2)
    save_file(head_state(model.heads[HEAD_NAME]), str(workdir / MLM_HEAD_FILE))
    report = HeadReport(
        **made_where(),
        recipe=recipe,
        blocks={lang: {"train": len(kept), "held_out": len(held)} for lang, (kept, held) in blocks.items()},
        held_out_perplexity=perplexity,
        evaluations=[evaluation.to_line() for evaluation in result.evaluations],
        training_seconds=round(result.seconds, 1),
        computed_in=result.precision,
    )
    write_json_atomic(workdir / REPORT_FILE, asdict(report))
    return report
