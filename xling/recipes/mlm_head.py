"""Train the masked-LM head that the embedded encoder lacks (`xling.train.mlm_head`), and ship it inside xling:

    python -m xling.recipes.mlm_head WORKDIR    # trains (rerun the same command to resume), then ships

Language adapters then train under this head, frozen (`xling train-lang --mlm-head pretrained`), as MAD-X trains
them under a model's own head. The head goes to `xling/pretrained/<model>/head/mlm/` in fp16 with
`pretrained.json` (corpora and licences, held-out perplexity per language, file hashes) and a card. Needs the
corpora (`XLING_CORPORA` or their public sources); the report and the perplexity curve stay in WORKDIR.
`bench/mlm_head_curves.py` draws the curves of the language adapters `recipes/mlm-head-qu.toml` trains under it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from xling.recipes.pretrained import ship_head
from xling.train.mlm_head import HeadRecipe, train_head


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", help="where the run, its report and the fp32 head are kept")
    parser.add_argument("--steps", type=int, default=HeadRecipe.steps, help="optimiser steps")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    arguments = parser.parse_args()
    recipe = HeadRecipe(steps=arguments.steps, device=arguments.device)
    workdir = Path(arguments.workdir)
    report = train_head(workdir, recipe)
    print(json.dumps({"held_out_perplexity": report.held_out_perplexity, "shipped": str(ship_head(workdir, recipe))}))


if __name__ == "__main__":
    main()
