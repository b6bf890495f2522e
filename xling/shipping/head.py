"""Train the masked-LM head that the embedded encoder lacks (`xling.train.mlm_head`), and ship it inside xling:

    python -m xling.shipping.head WORKDIR    # trains (rerun the same command to resume), then ships

Language adapters then train under this head, frozen (`xling train-lang --mlm-head pretrained`), as MAD-X trains
them under a model's own head. The head goes to `xling/pretrained/<model>/head/mlm/` in fp16 with
`pretrained.json` (corpora and licences, held-out perplexity per language, file hashes) and a card. Needs the
corpora (`XLING_CORPORA` or their public sources); the report and the perplexity curve stay in WORKDIR.
`bench/mlm_head_curves.py` draws the curves of the language adapters `recipes/mlm-head-qu.toml` trains under it.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from safetensors.torch import save_file

from xling.adapters.weights import read_weights
from xling.fileio import atomic_directory, file_sha256, write_json_atomic
from xling.models import model_label
from xling.pretrained import MLM_HEAD_FILE, PRETRAINED_ROOT, RECORD_FILE, PretrainedRecord
from xling.provenance import source_commit
from xling.roles import HEAD
from xling.shipping.adapters import corpus_records
from xling.train.cards.common import CARD_FILE, corpus_table
from xling.train.mlm_head import HEAD_NAME, HeadRecipe, HeadReport, train_head
from xling.train.mlm_head import REPORT_FILE as HEAD_REPORT_FILE


def ship_head(workdir: Path, recipe: HeadRecipe) -> Path:
    """Put the masked-LM head `python -m xling.shipping.head` trained in `workdir`, in fp16, with its record and
    card, into the package."""
    report = HeadReport.read(workdir / HEAD_REPORT_FILE)
    weights = {name: tensor.half() for name, tensor in read_weights(workdir / MLM_HEAD_FILE).items()}
    data = corpus_records(list(recipe.corpora.values()))
    folder = PRETRAINED_ROOT / model_label(recipe.model) / HEAD.name / HEAD_NAME
    with atomic_directory(folder, overwrite=True, replaces=()) as target:
        save_file(weights, str(target / MLM_HEAD_FILE))
        record = PretrainedRecord(
            name=HEAD_NAME,
            role=HEAD,
            recipe="python -m xling.shipping.head",
            seed=recipe.seed,
            commit=source_commit() or "unknown",
            stored_in="fp16",
            files={MLM_HEAD_FILE: file_sha256(target / MLM_HEAD_FILE)},
            data=data,
            perplexity=report.held_out_perplexity,
        )
        write_json_atomic(target / RECORD_FILE, record.to_record())
        (target / CARD_FILE).write_text(head_card(record, report), encoding="utf-8")
    return folder


def head_card(record: PretrainedRecord, report: HeadReport) -> str:
    perplexity = "\n".join(f"| {lang} | {value:,.1f} |" for lang, value in record.perplexity.items())
    data = corpus_table(record.data)
    steps = report.recipe.steps
    return f"""# Masked-LM head for {model_label(report.recipe.model)}

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


def main(
    workdir: Path = typer.Argument(..., help="Where the run, its report and the fp32 head are kept."),
    steps: int = typer.Option(HeadRecipe.steps, help="Optimiser steps."),
    device: str = typer.Option(HeadRecipe.device, help="auto, cpu or cuda."),
) -> None:
    """Train the masked-LM head the embedded encoder lacks (rerun to resume), then ship it inside xling."""
    recipe = HeadRecipe(steps=steps, device=device)
    report = train_head(workdir, recipe)
    print(json.dumps({"held_out_perplexity": report.held_out_perplexity, "shipped": str(ship_head(workdir, recipe))}))


if __name__ == "__main__":
    typer.run(main)
