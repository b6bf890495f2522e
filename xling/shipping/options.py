"""The options of the ship step (`run = "ship"`), light: recipes validate against them without torch."""

from __future__ import annotations

from dataclasses import dataclass

from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.options import opt
from xling.paths import WORKSPACE_HELP
from xling.roles import LANG, TASK

# what ships, trained by recipes/pretrained.toml's steps of these names
SHIPPED = [(LANG, "qu"), (LANG, "en"), (TASK, "ner-en"), (TASK, "ner-qu")]


@dataclass
class ShipOptions:
    """`run = "ship"`: the adapters this seed's earlier steps trained, written into the package with their
    records and cards (`xling.shipping.adapters.build`)."""

    output: str = opt(
        "shipped.json", "The record of what was shipped, in the recipe's results: each adapter's files and hashes."
    )
    model: str = opt(DEFAULT_MODEL, MODEL_HELP)
    workspace: str | None = opt(None, WORKSPACE_HELP)

    def output_file(self) -> str:
        return self.output
