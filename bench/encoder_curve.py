"""What does adapting the encoder buy? Zero-shot Quechua and English against the adaptation budget.

For each budget (steps of `xling train-encoder`, no-embeddings, batch 16, on Quechua text mixed with English
and Spanish text and the AmericasNLP Spanish-Quechua pairs, WikiANN-qu dev and silver-dev kept out), it adapts
the embedded encoder once, then runs `recipes/adapted-encoder-qu.toml` on it (ner-en with no language adapter,
three seeds); budget 0 is that recipe on the embedded encoder. Every part resumes where it stopped (the encoder's
run from its checkpoint, the recipe skips finished steps), so an interrupted run is continued by running it
again. `--collect` writes `results/adapted-encoder-qu/curve.json` from what has finished, and its plot,
`docs/img/adapted-encoder-qu.png`.

    XLING_CORPORA=../shared/corpora python -m bench.encoder_curve [--budgets 1000,0] [-w DIR]

`--smoke` runs budgets 2 and 0 end to end in a temporary folder: the mix's first lines, the recipe's steps
shrunk to two optimiser steps and 16 scored sentences, one seed, the curve and its plot written there.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from bench.common import first_lines, first_pairs, parsed, shrunk
from xling.fileio import write_json_atomic
from xling.provenance import made_where
from xling.recipes.planning import results_dir
from xling.recipes.reading import Recipe, read_recipe
from xling.recipes.results import combine
from xling.scoring.result import EvaluationResult
from xling.train.config import TrainConfig
from xling.train.log_lines import TrainLog
from xling.train.report import RunReport
from xling.train.text_config import EncoderOptions, mixed_sources
from xling.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "recipes" / "adapted-encoder-qu.toml"
RESULTS = REPO / "results" / "adapted-encoder-qu"
PLOT = REPO / "docs" / "img" / "adapted-encoder-qu.png"
# the rows the plot draws against the budget: label in the recipe -> legend
CURVES = {
    "ner-en, silver-dev, viterbi": "silver-dev, viterbi",
    "ner-en, silver-dev, split": "silver-dev, split",
    "ner-en, English dev": "English dev",
}
MIX = {
    "corpus": ["corpus:quechua-text"],
    "also": ["en=corpus:wikiann-en/train", "es=corpus:conll2002-es/train"],
    "parallel": ["corpus:americasnlp-es-qu"],
    "exclude": ["corpus:wikiann-qu/dev", "corpus:wikiann-qu/silver-dev"],
}


@dataclass
class Curve:
    """What every budget runs: the encoder's text mix, the recipe on each encoder, the workspace holding both."""

    mix: dict[str, list[str]]
    recipe: Recipe
    workspace: str


def encoder_options(budget: int, curve: Curve) -> EncoderOptions:
    return EncoderOptions(
        lang="qu",
        **curve.mix,
        method="no-embeddings",
        name=f"multilingual-e5-small-qu-{budget}",
        workspace=curve.workspace,
        training=TrainConfig(
            max_steps=budget, batch_size=16, learning_rate=None, eval_every=min(100, budget), precision="bf16"
        ),
    )


def encoder_folder(budget: int, curve: Curve) -> Path:
    options = encoder_options(budget, curve)
    return Workspace(curve.workspace, options.model).model_dir / "encoder" / options.name


def run_budget(budget: int, curve: Curve) -> None:
    from xling.recipes.running import run_recipe
    from xling.train.encoder import train_encoder

    model = "e5-small"
    if budget:
        folder = encoder_folder(budget, curve)
        if not folder.is_dir():
            train_encoder(encoder_options(budget, curve))
        model = str(folder)
    run_recipe(RECIPE, recipe=replace(curve.recipe, model=model, workspace=curve.workspace))


def seed_results(budget: int, curve: Curve) -> dict[int, list[EvaluationResult]] | None:
    """Each seed's evaluation results of the recipe on the budget's encoder, in step order; None until all ran."""
    model = str(encoder_folder(budget, curve)) if budget else "e5-small"
    runs = {}
    for seed in curve.recipe.seeds:
        folder = results_dir(Workspace(str(Path(curve.workspace) / f"seed-{seed}"), model), curve.recipe)
        files = [folder / f"{step.title}.json" for step in curve.recipe.steps if step.run == "evaluate"]
        if not all(file.is_file() for file in files):
            return None
        runs[seed] = [EvaluationResult.read(file) for file in files]
    return runs


def encoder_record(budget: int, curve: Curve) -> dict | None:
    """What the adaptation run reported, and its held-out perplexities at every evaluation."""
    folder = encoder_folder(budget, curve)
    if not (folder / "report.json").is_file():
        return None
    report = RunReport.read(folder)
    log = TrainLog.read(folder / "train_log.jsonl").evaluations
    keys = ("steps", "training_seconds", "computed_in", "method", "temperature", "mix", "held_out_perplexity")
    record = {key: getattr(report, key) for key in keys}
    record["mix"] = [asdict(replace(source, files=[in_corpora(f) for f in source.files])) for source in report.mix]
    return record | {
        "log": [{"step": e.step} | {k: v for k, v in e.metrics.items() if k.startswith("perplexity")} for e in log]
    }


def in_corpora(file: str) -> str:
    """A corpus file named from the corpora folder it was read in (`text/qu/...`), never by this machine's path."""
    from xling.data.catalog import corpora_root, corpus_cache

    for root in filter(None, (corpora_root(), corpus_cache())):
        if Path(file).is_relative_to(root):
            return str(Path(file).relative_to(root))
    return Path(file).name


def collect(budgets: list[int], curve: Curve) -> dict:
    """The curve: per budget, its encoder's record and the recipe's rows over the seeds, each row paired against
    the same row at budget 0 (the embedded encoder) on the same sentences, seed by seed."""
    from xling.scoring.bootstrap import paired

    base = seed_results(0, curve)
    points = []
    for budget in sorted(budgets):
        runs, encoder = seed_results(budget, curve), encoder_record(budget, curve) if budget else None
        if runs is None and encoder is None:
            continue
        rows = [row.to_record() for row in combine(runs)] if runs else []  # no recipe finished yet: perplexity only
        if base is not None and runs and budget:
            for position, row in enumerate(rows):
                ours = [runs[seed][position].sentence_counts for seed in runs]
                theirs = [base[seed][position].sentence_counts for seed in runs]
                row["versus_budget_0"] = paired(ours, theirs)
        points.append({"budget": budget, "encoder": encoder, "rows": rows})
    return {"recipe": curve.recipe.name, "mix": curve.mix, **made_where(), "points": points}


def plot(curve: dict, out: Path) -> None:
    """Held-out perplexity per adaptation step (the longest run), and F1 against the budget (mean ± sd over the
    seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    adapted = [point for point in curve["points"] if point["encoder"]]
    if adapted:
        longest = max(adapted, key=lambda point: point["budget"])["encoder"]["log"]
        for key in (k for k in longest[0] if k.startswith("perplexity")):
            lang = key.removeprefix("perplexity").lstrip("_") or "qu"
            left.plot([e["step"] for e in longest], [e[key] for e in longest], marker="o", markersize=3, label=lang)
    left.set_yscale("log")
    left.set_xlabel("adaptation steps")
    left.set_ylabel("held-out perplexity (whole vocabulary)")
    left.legend(fontsize=8)
    budgets, drawn = [point["budget"] for point in curve["points"]], False
    for label, legend in CURVES.items():
        rows = [next((r for r in point["rows"] if r["label"] == label), None) for point in curve["points"]]
        xs = [b for b, r in zip(budgets, rows) if r]
        means, sds = [100 * r["f1"] for r in rows if r], [100 * r["f1_std"] for r in rows if r]
        if xs:
            right.errorbar(xs, means, yerr=sds, marker="o", markersize=3, capsize=3, label=legend)
            drawn = True
    right.set_xlabel("adaptation steps (0: the embedded encoder, xling's shipped head)")
    right.set_ylabel("F1 (mean ± sd over the seeds)")
    if drawn:
        right.legend(fontsize=8)
    else:
        right.text(0.5, 0.5, "no recipe has finished on an encoder yet", ha="center", transform=right.transAxes)
    figure.suptitle("Adapting the encoder: perplexity, zero-shot Quechua (silver-dev) and English dev")
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)


def smoke_curve(folder: Path) -> Curve:
    """The curve a smoke run draws in `folder`: the mix's first lines, the recipe's steps shrunk, one seed."""
    also = [f"{lang}={first_lines([corpus], folder / f'{lang}.txt')}" for lang, corpus in mixed_sources(MIX["also"])]
    mix = MIX | {
        "corpus": [first_lines(MIX["corpus"], folder / "qu.txt")],
        "also": also,
        "parallel": [first_pairs(MIX["parallel"], "es", "qu", folder / "parallel")],
    }
    recipe = read_recipe(RECIPE)
    steps = [replace(step, options=shrunk(step, folder)) for step in recipe.steps]
    return Curve(mix, replace(recipe, seeds=[1], steps=steps), str(folder / "workspace"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="1000,0")
    parser.add_argument("-w", "--workspace", default=str(REPO.parent / "encoder-curve"))
    parser.add_argument("--collect", action="store_true", help="Write the curve of what has finished; train nothing.")
    args = parsed(parser, {"budgets": "2,0"})
    budgets = [int(b) for b in args.budgets.split(",")]
    if args.smoke:
        with tempfile.TemporaryDirectory(prefix="xling-smoke-") as smoke:
            curve = smoke_curve(Path(smoke))
            for budget in budgets:
                run_budget(budget, curve)
            write_curve(collect(budgets, curve), Path(smoke) / "curve.json", Path(smoke) / "curve.png")
    elif args.collect:
        write_curve(collect(budgets, Curve(MIX, read_recipe(RECIPE), args.workspace)), RESULTS / "curve.json", PLOT)
    else:
        for budget in budgets:
            run_budget(budget, Curve(MIX, read_recipe(RECIPE), args.workspace))


def write_curve(curve: dict, out: Path, plot_file: Path) -> None:
    write_json_atomic(out, curve)
    plot(curve, plot_file)
    for point in curve["points"]:
        rows = ", ".join(f"{row['label']} {100 * row['f1']:.1f}" for row in point["rows"])
        print(f"budget {point['budget']}: F1 {rows}")
    print(f"wrote {out} and {plot_file}")


if __name__ == "__main__":
    main()
