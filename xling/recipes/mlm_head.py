"""Train the masked-LM head that the embedded encoder lacks, and ship it inside xling:

    python -m xling.recipes.mlm_head train WORKDIR    # trains (rerun the same command to resume), then ships
    python -m xling.recipes.mlm_head curves WS/seed-1 WS/seed-2 WS/seed-3 --out FILE.json --plot FILE.png
                                                      # perplexity curves of recipes/mlm-head-qu.toml's adapters

The encoder stays frozen and carries no adapter. Only the head trains: its transform (dense layer and LayerNorm)
and its output bias, the decoder tied to the word embeddings, over Quechua, Spanish and English text. Language
adapters then train under this head, frozen (`xling train-lang --mlm-head pretrained`), as MAD-X trains them
under a model's own head. The head goes to `xling/pretrained/<model>/head/mlm/` in fp16 with `pretrained.json`
(corpora and licences, held-out perplexity per language, file hashes) and a card. Needs the corpora
(`XLING_CORPORA` or their public sources); the report and the perplexity curve stay in WORKDIR.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import save_file

from xling.adapters import AdaptedModel
from xling.adapters.heads import MaskedLMHead, MaskedLMHeadConfig
from xling.adapters.weights import read_weights
from xling.cards.common import CARD_FILE
from xling.data.text import read_text
from xling.device import autocast
from xling.fileio import atomic_directory, file_sha256, read_json, write_json_atomic
from xling.models import load_model, model_label
from xling.models.loading import DEFAULT_MODEL
from xling.pretrained import MLM_HEAD_FILE, PRETRAINED_ROOT, RECORD_FILE, PretrainedRecord
from xling.provenance import made_where, source_commit
from xling.recipes.pretrained import corpus_records, corpus_table
from xling.roles import HEAD as HEAD_ROLE
from xling.train.config import MaskingConfig, TrainConfig
from xling.train.language import split_held_out, unigram_bias
from xling.train.loop import train
from xling.train.mlm import MaskedLMObjective, pack_blocks

HEAD = "mlm"
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


def train_head(workdir: Path, recipe: HeadRecipe) -> dict:
    """Train the head in `workdir` (resumable), write its fp32 weights and `report.json` there, return the report;
    a head that `workdir` holds already from the same recipe is not trained again."""
    done = workdir / REPORT_FILE
    if (
        done.is_file()
        and (workdir / MLM_HEAD_FILE).is_file()
        and (report := read_json(done)).get("recipe") == asdict(recipe)
    ):
        return report
    workdir.mkdir(parents=True, exist_ok=True)
    encoder, tokenizer = load_model(recipe.model)
    blocks = language_blocks(recipe, tokenizer)
    train_blocks = torch.cat([kept for kept, _ in blocks.values()])
    held = torch.cat([held[: recipe.eval_blocks_per_language] for _, held in blocks.values()])
    torch.manual_seed(recipe.seed)
    model = AdaptedModel(encoder)
    embeddings = encoder.get_input_embeddings()
    config = MaskedLMHeadConfig(embeddings.num_embeddings, model.config.layer_norm_eps)
    head = MaskedLMHead(model.hidden_size, config, embeddings)
    unigram_bias(head, train_blocks, tokenizer.all_special_ids)
    model.add_head(HEAD, head)
    model.train_adapter(None, train=[HEAD])
    masking = MaskingConfig()
    objective = MaskedLMObjective(HEAD, train_blocks, held, tokenizer, masking, recipe.seed, vocab_from_corpus=True)
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
            alone = MaskedLMObjective(HEAD, train_blocks[:1], held_out, tokenizer, masking, recipe.seed)
            perplexity[lang] = round(alone.evaluate(model)["perplexity"], 2)
    save_file(head_state(model.heads[HEAD]), str(workdir / MLM_HEAD_FILE))
    report = {
        **made_where(),
        "recipe": asdict(recipe),
        "blocks": {lang: {"train": len(kept), "held_out": len(held)} for lang, (kept, held) in blocks.items()},
        "held_out_perplexity": perplexity,
        "evaluations": result.evaluations,
        "training_seconds": round(result.seconds, 1),
        "computed_in": result.precision,
    }
    write_json_atomic(workdir / REPORT_FILE, report)
    return report


def ship(workdir: Path, recipe: HeadRecipe) -> Path:
    """Put the trained head, in fp16, with its record and card, into the package."""
    report = read_json(workdir / REPORT_FILE)
    weights = {name: tensor.half() for name, tensor in read_weights(workdir / MLM_HEAD_FILE).items()}
    data = corpus_records(list(recipe.corpora.values()))
    folder = PRETRAINED_ROOT / model_label(recipe.model) / "head" / HEAD
    with atomic_directory(folder, overwrite=True, replaces=()) as target:
        save_file(weights, str(target / MLM_HEAD_FILE))
        record = PretrainedRecord(
            name=HEAD,
            role=HEAD_ROLE,
            recipe="python -m xling.recipes.mlm_head",
            seed=recipe.seed,
            commit=source_commit() or "unknown",
            stored_in="fp16",
            files={MLM_HEAD_FILE: file_sha256(target / MLM_HEAD_FILE)},
            data=data,
            perplexity=report["held_out_perplexity"],
        )
        write_json_atomic(target / RECORD_FILE, record.to_record())
        (target / CARD_FILE).write_text(head_card(record, report), encoding="utf-8")
    return folder


def head_card(record: PretrainedRecord, report: dict) -> str:
    perplexity = "\n".join(f"| {lang} | {value:,.1f} |" for lang, value in record.perplexity.items())
    data = corpus_table(record.data)
    steps = report["recipe"]["steps"]
    return f"""# Masked-LM head for {model_label(report["recipe"]["model"])}

The encoder ships without a masked-LM head. This one was trained on the frozen encoder, with no adapter, for
{steps:,} steps (`{record.recipe}`, seed {record.seed}, commit {record.commit}): a dense layer, GELU and
LayerNorm, and an output bias, the decoder tied to the word embeddings. `xling train-lang --mlm-head pretrained`
trains a language adapter under it, frozen.

Held-out masked-LM perplexity over the whole vocabulary, after training (lines the head never saw):

| language | perplexity |
|---|---|
{perplexity}

| corpus | public source | licence |
|---|---|---|
{data}

| file | sha256 |
|---|---|
| {MLM_HEAD_FILE} | `{record.files[MLM_HEAD_FILE]}` |
"""


# The language adapters `recipes/mlm-head-qu.toml` trains under each head: (language, fresh head, pretrained head).
COMPARED = [("qu", "qu", "qu-pretrained-head"), ("en", "en", "en-pretrained-head")]


def held_out_curve(adapter: Path) -> list[dict]:
    """A saved language adapter's held-out perplexity at each evaluated step."""
    lines = (adapter / "train_log.jsonl").read_text(encoding="utf-8").splitlines()
    return [{"step": e["step"], "perplexity": e["perplexity"]} for e in map(json.loads, lines) if "perplexity" in e]


def steps_to_reach(curve: list[dict], perplexity: float) -> int | None:
    return next((point["step"] for point in curve if point["perplexity"] <= perplexity), None)


def compare_curves(seed_workspaces: list[Path], model: str = DEFAULT_MODEL) -> dict:
    """Per language and seed: the perplexity curves under a fresh and under the pretrained head, and the steps the
    pretrained head's adapter takes to reach the fresh head's final perplexity."""
    languages = {}
    for lang, fresh_name, pretrained_name in COMPARED:
        seeds = []
        for workspace in seed_workspaces:
            lang_dir = workspace / model_label(model) / "lang"
            fresh, pretrained = held_out_curve(lang_dir / fresh_name), held_out_curve(lang_dir / pretrained_name)
            seeds.append(
                {
                    "seed": int(workspace.name.rsplit("-", 1)[1]),
                    "fresh": fresh,
                    "pretrained": pretrained,
                    "fresh_final": fresh[-1]["perplexity"],
                    "pretrained_final": pretrained[-1]["perplexity"],
                    "steps_to_fresh_final": steps_to_reach(pretrained, fresh[-1]["perplexity"]),
                }
            )
        languages[lang] = seeds
    return {**made_where(), "model": model, "languages": languages}


def plot_curves(curves: dict, out: Path) -> Path:
    """Held-out perplexity against steps, fresh head and pretrained head, one line per seed, a panel per language."""
    from xling.analysis.plots import plt, save

    figure, axes = plt.subplots(1, len(curves["languages"]), figsize=(5.5 * len(curves["languages"]), 4))
    for axis, (lang, seeds) in zip(axes, curves["languages"].items()):
        for seed in seeds:
            for kind, colour in (("fresh", "tab:orange"), ("pretrained", "tab:blue")):
                points = seed[kind]
                label = f"{kind} head" if seed is seeds[0] else None
                axis.plot([p["step"] for p in points], [p["perplexity"] for p in points], color=colour, label=label)
        axis.set_yscale("log")
        axis.set_xlabel("language-adapter step")
        axis.set_ylabel("held-out perplexity (whole vocabulary)")
        axis.set_title(f"lang-{lang}: {len(seeds)} seeds")
        axis.legend()
    return save(figure, out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    trains = commands.add_parser("train", help="train the head in WORKDIR (resumable), then ship it")
    trains.add_argument("workdir", help="where the run, its report and the fp32 head are kept")
    trains.add_argument("--steps", type=int, default=HeadRecipe.steps, help="optimiser steps")
    trains.add_argument("--device", default="auto", help="auto, cpu or cuda")
    curves = commands.add_parser("curves", help="the perplexity curves of recipes/mlm-head-qu.toml's adapters")
    curves.add_argument("seed_workspaces", nargs="+", type=Path, help="the recipe's seed-N workspaces")
    curves.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    curves.add_argument("--plot", type=Path, required=True, help="the PNG to draw")
    arguments = parser.parse_args()
    if arguments.command == "curves":
        result = compare_curves(arguments.seed_workspaces)
        write_json_atomic(arguments.out, result)
        plot_curves(result, arguments.plot)
        return
    recipe = HeadRecipe(steps=arguments.steps, device=arguments.device)
    workdir = Path(arguments.workdir)
    report = train_head(workdir, recipe)
    print(json.dumps({"held_out_perplexity": report["held_out_perplexity"], "shipped": str(ship(workdir, recipe))}))


if __name__ == "__main__":
    main()
