"""The options of `xling analyze` (one dataclass for all its analyses, as for every command): the command
line, recipe steps (`run = "analyze"`, `analysis = ...`) and `xling.analysis.reports.run_analysis` share it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xling.errors import XlingError
from xling.options import at_least, opt
from xling.tagging.spec import TaggerSpec

# Each analysis, the options it needs, and the PNG it draws unless --output names another.
ANALYSES = {
    "fusion": (("data", "lang", "fusion"), "fusion-attention.png"),
    "ablation": (("data", "lang"), "layer-ablation.png"),
    "confidence": (("data", "lang"), "confidence.png"),
    "errors": (("data", "lang"), "errors.png"),
    "params": ((), None),
}
# what matplotlib writes by the output's suffix, with nothing beyond its own dependencies
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps")


@dataclass
class AnalyzeOptions:
    analysis: str = opt("params", f"Which analysis: {', '.join(ANALYSES)} (on the command line, the subcommand).")
    data: str | None = opt(None, "Labelled data of the language: a CoNLL file or a named source.", argument=1)
    # the analyses look into the PyTorch model, task by task
    tagger: TaggerSpec = opt(
        factory=TaggerSpec,
        without=("task", "runtime"),
        overrides={
            "lang": {
                "required": False,
                "help": "Language of the data: its language adapter goes below the task adapter or fusion.",
            },
            "task_adapter": {"help": "Task adapter (default: as for tagging)."},
            "fusion": {"help": "A trained fusion (the fusion analysis; ablation: ablate it instead)."},
        },
    )
    limit: int | None = opt(None, "Use only the first N sentences (an ablation evaluates n(n+1)/2 times).")
    output: str | None = opt(None, "PNG to write; the numbers go beside it as JSON (default: the analysis's name).")

    def __post_init__(self):
        if self.analysis not in ANALYSES:
            raise XlingError(f"analysis must be one of {', '.join(ANALYSES)}, not {self.analysis!r}")
        given = {"data": self.data, "lang": self.tagger.lang, "fusion": self.tagger.fusion}
        if missing := [name for name in ANALYSES[self.analysis][0] if given[name] is None]:
            raise XlingError(f"analyze {self.analysis} needs {', '.join('--' + m.replace('_', '-') for m in missing)}")
        at_least("limit", self.limit, 1)
        if self.output and Path(self.output).suffix.lower() not in PLOT_SUFFIXES:
            raise XlingError(
                f"--output {self.output}: a plot is written as {', '.join(s[1:] for s in PLOT_SUFFIXES)} "
                "(by the file's suffix)"
            )

    def output_file(self) -> str | None:
        """The PNG the analysis draws (None: params draws none)."""
        return self.output or ANALYSES[self.analysis][1]

    @property
    def output_path(self) -> Path:
        return Path(self.output_file())
