"""How a task is trained: a `Method` says what trains, what is saved, and how the result is named."""

from __future__ import annotations

from dataclasses import dataclass

from xling.errors import XlingError


@dataclass(frozen=True)
class Method:
    name: str
    help: str
    learning_rate: float  # the default peak learning rate
    suffix: str  # of the default name, TASK-LANG<suffix>
    adapters: bool  # a task adapter trains, over the language adapter (MAD-X); else the model runs without adapters
    trains_encoder: bool  # the whole encoder trains and is saved beside the head

    def default_name(self, task: str, lang: str, use_lang_adapter: bool) -> str:
        return f"{task}-{lang}{self.suffix if use_lang_adapter or not self.adapters else '-nolang'}"


# The head alone is a linear probe on frozen features and needs a larger step: on WikiANN-en, one epoch reached
# dev F1 17.8 at 1e-3 and 40.0 at 1e-2.
METHODS = {
    method.name: method
    for method in (
        Method("adapter", "MAD-X", 1e-3, "", adapters=True, trains_encoder=False),
        Method("full", "full fine-tuning", 5e-5, "-full", adapters=False, trains_encoder=True),
        Method("head", "only the head", 1e-2, "-head", adapters=False, trains_encoder=False),
    )
}


def check_method(name: str) -> Method:
    if name not in METHODS:
        raise XlingError(f"method must be one of {', '.join(METHODS)}, not {name!r}")
    return METHODS[name]
