"""Held-out perplexity curves of the language adapters `recipes/mlm-head-qu.toml` trains under the shipped
masked-LM head and under a fresh one, per seed, and the steps the first takes to reach the second's final
perplexity:

    python -m bench.mlm_head_curves WS/seed-1 WS/seed-2 WS/seed-3 --out results/mlm-head/lang-curves-CPU.json \
        --plot FILE.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

from xling.fileio import write_json_atomic
from xling.models import model_label
from xling.models.loading import DEFAULT_MODEL
from xling.provenance import made_where
from xling.train.log_lines import TrainLog

# The language adapters `recipes/mlm-head-qu.toml` trains under each head: (language, fresh head, pretrained head).
COMPARED = [("qu", "qu", "qu-pretrained-head"), ("en", "en", "en-pretrained-head")]


def held_out_curve(adapter: Path) -> list[dict]:
    """A saved language adapter's held-out perplexity at each evaluated step."""
    log = TrainLog.read(adapter / "train_log.jsonl").evaluations
    return [{"step": e.step, "perplexity": e.perplexity} for e in log if e.perplexity is not None]


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
    parser.add_argument("seed_workspaces", nargs="+", type=Path, help="the recipe's seed-N workspaces")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    parser.add_argument("--plot", type=Path, required=True, help="the PNG to draw")
    arguments = parser.parse_args()
    result = compare_curves(arguments.seed_workspaces)
    write_json_atomic(arguments.out, result)
    plot_curves(result, arguments.plot)


if __name__ == "__main__":
    main()
