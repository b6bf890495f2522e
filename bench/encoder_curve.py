"""What does adapting the encoder buy? Zero-shot Quechua and English against the adaptation budget.

For each budget (steps of `xling train-encoder`, no-embeddings, batch 16, on Quechua text mixed with English
and Spanish text and the AmericasNLP Spanish-Quechua pairs, WikiANN-qu dev and silver-dev kept out), it adapts
the embedded encoder once, then runs `recipes/adapted-encoder-qu.toml` on it (ner-en with no language adapter,
three seeds); budget 0 is that recipe on the embedded encoder. Every part resumes where it stopped (the encoder's
run from its checkpoint, the recipe skips finished steps), so an interrupted run is continued by running it
again. `--collect` writes `results/adapted-encoder-qu/curve.json` from what has finished, and its plot,
`docs/img/adapted-encoder-qu.png`.

    XLING_CORPORA=../shared/corpora python -m bench.encoder_curve [--budgets 1000,0] [-w DIR]
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, replace
from pathlib import Path

from xling.fileio import write_json_atomic
from xling.provenance import made_where
from xling.recipes.planning import results_dir
from xling.recipes.reading import read_recipe
from xling.recipes.results import combine
from xling.scoring.result import EvaluationResult
from xling.train.config import TrainConfig
from xling.train.log_lines import TrainLog
from xling.train.report import RunReport
from xling.train.text_config import EncoderOptions
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


def encoder_options(budget: int, workspace: str) -> EncoderOptions:
    return EncoderOptions(
        lang="qu",
        **MIX,
        method="no-embeddings",
        name=f"multilingual-e5-small-qu-{budget}",
        workspace=workspace,
        training=TrainConfig(
            max_steps=budget, batch_size=16, learning_rate=None, eval_every=min(100, budget), precision="bf16"
        ),
    )


def encoder_folder(budget: int, workspace: str) -> Path:
    options = encoder_options(budget, workspace)
    return Workspace(workspace, options.model).model_dir / "encoder" / options.name


def run_budget(budget: int, workspace: str) -> None:
    from xling.recipes.running import run_recipe
    from xling.train.encoder import train_encoder

    model = "e5-small"
    if budget:
        folder = encoder_folder(budget, workspace)
        if not folder.is_dir():
            train_encoder(encoder_options(budget, workspace))
        model = str(folder)
    recipe = replace(read_recipe(RECIPE), model=model, workspace=workspace)
    run_recipe(RECIPE, recipe=recipe)


def seed_results(budget: int, workspace: str) -> dict[int, list[EvaluationResult]] | None:
    """Each seed's evaluation results of the recipe on the budget's encoder, in step order; None until all ran."""
    recipe = read_recipe(RECIPE)
    model = str(encoder_folder(budget, workspace)) if budget else "e5-small"
    runs = {}
    for seed in recipe.seeds:
        folder = results_dir(Workspace(str(Path(workspace) / f"seed-{seed}"), model), recipe)
        files = [folder / f"{step.title}.json" for step in recipe.steps if step.run == "evaluate"]
        if not all(file.is_file() for file in files):
            return None
        runs[seed] = [EvaluationResult.read(file) for file in files]
    return runs


def encoder_record(budget: int, workspace: str) -> dict | None:
    """What the adaptation run reported, and its held-out perplexities at every evaluation."""
    folder = encoder_folder(budget, workspace)
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


def collect(budgets: list[int], workspace: str) -> dict:
    """The curve: per budget, its encoder's record and the recipe's rows over the seeds, each row paired against
    the same row at budget 0 (the embedded encoder) on the same sentences, seed by seed."""
    from xling.scoring.bootstrap import paired

    base = seed_results(0, workspace)
    points = []
    for budget in sorted(budgets):
        runs, encoder = seed_results(budget, workspace), encoder_record(budget, workspace) if budget else None
        if runs is None and encoder is None:
            continue
        rows = [row.to_record() for row in combine(runs)] if runs else []  # no recipe finished yet: perplexity only
        if base is not None and runs and budget:
            for position, row in enumerate(rows):
                ours = [runs[seed][position].sentence_counts for seed in runs]
                theirs = [base[seed][position].sentence_counts for seed in runs]
                row["versus_budget_0"] = paired(ours, theirs)
        points.append({"budget": budget, "encoder": encoder, "rows": rows})
    return {"recipe": "adapted-encoder-qu", "mix": MIX, **made_where(), "points": points}


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="1000,0")
    parser.add_argument("-w", "--workspace", default=str(REPO.parent / "encoder-curve"))
    parser.add_argument("--collect", action="store_true", help="Write the curve of what has finished; train nothing.")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    if args.collect:
        curve = collect(budgets, args.workspace)
        write_json_atomic(RESULTS / "curve.json", curve)
        plot(curve, PLOT)
        print(f"wrote {RESULTS / 'curve.json'} and {PLOT}")
        return
    for budget in budgets:
        run_budget(budget, args.workspace)


if __name__ == "__main__":
    main()
