"""The `xling` layout: an adapter folder as xling saves it, pushed with its card naming the repository."""

from __future__ import annotations

from pathlib import Path

from xling.exporting import PushOptions, saved_adapter


def push_folder(options: PushOptions, staging: Path) -> tuple[Path, dict[str, str]]:
    from xling.train.cards.adapter import model_card
    from xling.train.cards.common import CARD_FILE
    from xling.train.report import RunReport

    directory = saved_adapter(options)
    return directory, {CARD_FILE: model_card(RunReport.read(directory), options.repo_id)}
