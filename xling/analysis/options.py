"""The options of `xling analyze` (one dataclass for its four analyses, as for every command): the command
line, recipe steps (`run = "analyze"`, `analysis = ...`) and `xling.analysis.reports.run_analysis` share it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xling.errors import XlingError
from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.options import at_least, opt
from xling.paths import WORKSPACE_HELP
from xling.tagging.decoding import SAVED_DECODER_HELP, check_decoder

# Each analysis, the options it needs, and the PNG it draws unless --output names another.
ANALYSES = {
    "fusion": (("data", "lang", "fusion"), "fusion-attention.png"),
    "ablation": (("data", "lang"), "layer-ablation.png"),
    "confidence": (("data", "lang"), "confidence.png"),
    "params": ((), None),
}


@dataclass
class AnalyzeOptions:
    analysis: str = opt("params", f"Which analysis: {', '.join(ANALYSES)} (on the command line, the subcommand).")
    data: str | None = opt(None, "Labelled data of the language: a CoNLL file or a named source.", argument=1)
    lang: str | None = opt(None, "Language of the data: its language adapter goes below the task adapter or fusion.")
    task_adapter: str | None = opt(None, "Task adapter (default: as for tagging).")
    fusion: str | None = opt(None, "A trained fusion (the fusion analysis; ablation: ablate it instead).")
    decoder: str | None = opt(None, SAVED_DECODER_HELP)
    limit: int | None = opt(None, "Use only the first N sentences (an ablation evaluates n(n+1)/2 times).")
    output: str | None = opt(None, "PNG to write; the numbers go beside it as JSON (default: the analysis's name).")
    model: str = opt(DEFAULT_MODEL, MODEL_HELP)
    workspace: str | None = opt(None, WORKSPACE_HELP)

    def __post_init__(self):
        if self.analysis not in ANALYSES:
            raise XlingError(f"analysis must be one of {', '.join(ANALYSES)}, not {self.analysis!r}")
        missing = [name for name in ANALYSES[self.analysis][0] if getattr(self, name) is None]
        if missing:
            raise XlingError(f"analyze {self.analysis} needs {', '.join('--' + m.replace('_', '-') for m in missing)}")
        check_decoder(self.decoder)
        at_least("limit", self.limit, 1)

    def output_file(self) -> str | None:
        """The PNG the analysis draws (None: params draws none)."""
        return self.output or ANALYSES[self.analysis][1]

    @property
    def output_path(self) -> Path:
        return Path(self.output_file())
