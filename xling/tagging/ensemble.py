"""Tagging with several task adapters at once (`--ensemble`): each one tags in its own setup (the language adapter
under it as its record says, on its runtime), their word probabilities are averaged label by label, and the mean
is decoded once. An ensemble over source languages: `ner-en` with a `ner-es` continued from it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from xling.errors import XlingError
from xling.roles import AdapterFolders
from xling.tagging.base import TextTagger
from xling.tagging.spec import TaggerSpec
from xling.workspace import Workspace


class EnsembleTagger(TextTagger):
    """The mean of its members' word probabilities, in the first member's label order, decoded once."""

    def __init__(self, members: list[TextTagger], decoder: str):
        first = members[0]
        for member in members[1:]:
            if sorted(member.labels) != sorted(first.labels):
                raise XlingError(
                    f"{member.head} tags {', '.join(member.labels)}; {first.head} tags {', '.join(first.labels)}: "
                    "an ensemble averages task adapters of one label set (drop or map the others' types when training)"
                )
        self.members, self.labels, self.decoder = members, first.labels, decoder
        self.batch_size, self.runtime, self.computed_in = first.batch_size, first.runtime, first.computed_in
        self.order = [[member.labels.index(label) for label in first.labels] for member in members]
        self.head = "+".join(member.head for member in members)
        self.setup = f"Mean({', '.join(str(member.setup) for member in members)})"
        self.trained_from: list[Path] = [f for member in members for f in getattr(member, "trained_from", [])]
        # the first member's adapters by role, the others' by name (an ONNX member's export holds its own)
        self.directories, self.fused = getattr(first, "directories", AdapterFolders()), getattr(first, "fused", {})
        self.ensemble = {m.head: d for m in members[1:] if (d := getattr(m, "directories", AdapterFolders()).task)}

    def word_probabilities(self, sentences: list[list[str]]) -> list[np.ndarray]:
        each = [member.word_probabilities(sentences) for member in self.members]
        return [
            np.mean([probabilities[:, order] for probabilities, order in zip(sentence, self.order)], axis=0)
            for sentence in zip(*each)
        ]


def ensemble_tagger(load, spec: TaggerSpec) -> EnsembleTagger:
    """The spec's task adapter and those of `spec.ensemble`, each loaded by `load` as a tagger of its own."""
    first = spec.task_adapter or Workspace(spec.workspace, spec.model).task_adapter_name(spec.task, spec.lang)
    members = [load(replace(spec, task_adapter=name, ensemble=[])) for name in [first, *spec.ensemble]]
    return EnsembleTagger(members, spec.decoder or members[0].decoder)
