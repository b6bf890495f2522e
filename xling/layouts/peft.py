"""The `peft` layout: a LoRA task adapter as Hugging Face PEFT saves one (`xling.adapters.lora.peft`), its card
loading it with PEFT and `pipeline()`."""

from __future__ import annotations

from pathlib import Path

from xling.layouts import adapter_layout
from xling.roles import task_record


def write(directory: Path, target: Path, repo_id: str | None = None, overwrite: bool = False) -> None:
    from xling.adapters.lora.peft import export_peft
    from xling.train.cards.common import CARD_FILE
    from xling.train.cards.peft import peft_card
    from xling.train.report import RunReport

    card = peft_card(RunReport.read(directory), repo_id)
    export_peft(directory, target, overwrite=overwrite, extra_files={CARD_FILE: card} | task_record(directory))


export, push_folder = adapter_layout(
    write, "AutoPeftModelForTokenClassification.from_pretrained({target}, id2label=...) (its README.md)"
)
