"""Held-out perplexity curves of the language adapters `recipes/mlm-head-qu.toml` trains under the shipped
masked-LM head and under a fresh one, per seed, and the steps the first takes to reach the second's final
perplexity:

    python -m bench.mlm_head_curves WS/seed-1 WS/seed-2 WS/seed-3 --out results/mlm-head/lang-curves-CPU.json \
        --plot FILE.png
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.common import parsed
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


def logged_workspaces(root: Path) -> list[Path]:
    """Two seed workspaces whose language adapters' logs hold a few falling perplexities: the smoke run's input."""
    from xling.fileio import append_jsonl
    from xling.train.log_lines import Evaluation

    workspaces = [root / f"seed-{seed}" for seed in (1, 2)]
    for number, workspace in enumerate(workspaces):
        for _, *names in COMPARED:
            for start, name in zip((60.0, 40.0), names):
                log = workspace / model_label(DEFAULT_MODEL) / "lang" / name / "train_log.jsonl"
                log.parent.mkdir(parents=True, exist_ok=True)
                for step in (0, 50, 100):
                    line = Evaluation(step, 0.0, float(step), {"perplexity": start / (1 + step / 50) + number})
                    append_jsonl(log, line.to_line())
    return workspaces


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seed_workspaces", nargs="*", type=Path, help="the recipe's seed-N workspaces")
    parser.add_argument("--out", type=Path, help="the JSON file to write")
    parser.add_argument("--plot", type=Path, help="the PNG to draw")
    smoke = Path(tempfile.mkdtemp(prefix="xling-smoke-")) if "--smoke" in sys.argv else None
    arguments = parsed(parser, {"out": smoke and smoke / "curves.json", "plot": smoke and smoke / "curves.png"})
    workspaces = logged_workspaces(smoke) if smoke else arguments.seed_workspaces
    if not workspaces or arguments.out is None or arguments.plot is None:
        parser.error("give the seed workspaces, --out and --plot")
    result = compare_curves(workspaces)
    write_json_atomic(arguments.out, result)
    plot_curves(result, arguments.plot)
    for lang, seeds in result["languages"].items():
        reached = [seed["steps_to_fresh_final"] for seed in seeds]
        print(f"lang-{lang}: the pretrained head reaches the fresh head's final perplexity at steps {reached}")
    print(f"wrote {arguments.out} and {arguments.plot}")


if __name__ == "__main__":
    main()
