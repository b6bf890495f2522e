"""The analyses, each registered once as an `Analysis`, and the options of `xling analyze` (one dataclass for all
of them, as for every command): the command line's subcommands, recipe steps (`run = "analyze"`, `analysis =
...`) and `xling.analysis.reports.run_analysis` read both."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xling.errors import XlingError
from xling.given_data import LabelledData
from xling.options import at_least, opt
from xling.tagging.spec import TaggerSpec


@dataclass(frozen=True)
class Analysis:
    """One analysis: its subcommand's name and help, the options it cannot run without (`needs`: none, it tags
    nothing) and those its subcommand shows, its report (`module:function(options, console) -> dict`, imported
    when it runs), what is printed of the result (`module:function(result, options)`), and the PNG it draws
    unless --output names another."""

    name: str
    help: str
    needs: tuple[str, ...]
    shown: tuple[str, ...]
    report: str
    summary: str | None = None
    plot: str | None = None


# what every analysis that tags takes besides its own options
SETUP = ("lang_adapter", "no_lang_adapter", "batch_size", "device", "precision", "output", "model", "workspace")
REPORTS = "xling.analysis.reports"
ANALYSES = {
    analysis.name: analysis
    for analysis in (
        Analysis(
            "fusion",
            "Average fusion attention per layer and adapter, as a heatmap (AdapterFusion, Figure 4).",
            ("data", "lang", "fusion"),
            ("data", "fusion", "lang", *SETUP),
            f"{REPORTS}:fusion_report",
            plot="fusion-attention.png",
        ),
        Analysis(
            "ablation",
            "Relative F1 drop when the adapters of layers i..j are removed (Houlsby et al., Figure 6).",
            ("data", "lang"),
            ("data", "lang", "task_adapter", "fusion", "limit", *SETUP),
            f"{REPORTS}:ablation_report",
            f"{REPORTS}:ablation_summary",
            "layer-ablation.png",
        ),
        Analysis(
            "confidence",
            "How often tagged entities are right, and words tagged O are inside an entity, by their probability: "
            "which self-train --threshold keeps pseudo-labels right.",
            ("data", "lang"),
            ("data", "lang", "task_adapter", "decoder", "limit", *SETUP),
            f"{REPORTS}:confidence_report",
            f"{REPORTS}:confidence_table",
            "confidence.png",
        ),
        Analysis(
            "errors",
            "Which entities are right, of the wrong type or span, spurious or missed, the confusion of types as a "
            "heatmap, and the words wrong spans leave out or take in (a target language's span conventions show "
            "there).",
            ("data", "lang"),
            ("data", "lang", "task_adapter", "decoder", "limit", *SETUP),
            f"{REPORTS}:errors_report",
            f"{REPORTS}:errors_table",
            "errors.png",
        ),
        Analysis(
            "params",
            "Parameters each adapter and task adds, as a share of the base model.",
            (),
            ("model", "workspace"),
            f"{REPORTS}:params_report",
            f"{REPORTS}:params_table",
        ),
    )
}
# what matplotlib writes by the output's suffix, with nothing beyond its own dependencies
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps")


@dataclass
class AnalyzeOptions:
    analysis: str = opt("params", f"Which analysis: {', '.join(ANALYSES)} (on the command line, the subcommand).")
    data: LabelledData | None = opt(None, "Labelled data of the language: a CoNLL file or a named source.", argument=1)
    # the analyses look into the PyTorch model, task by task
    tagger: TaggerSpec = opt(
        factory=TaggerSpec,
        without=("task", "runtime", "ensemble"),
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
        if missing := [name for name in ANALYSES[self.analysis].needs if given[name] is None]:
            raise XlingError(f"analyze {self.analysis} needs {', '.join('--' + m.replace('_', '-') for m in missing)}")
        at_least("limit", self.limit, 1)
        if self.output and Path(self.output).suffix.lower() not in PLOT_SUFFIXES:
            raise XlingError(
                f"--output {self.output}: a plot is written as {', '.join(s[1:] for s in PLOT_SUFFIXES)} "
                "(by the file's suffix)"
            )

    def output_file(self) -> str | None:
        """The PNG the analysis draws (None: params draws none)."""
        return self.output or ANALYSES[self.analysis].plot

    @property
    def output_path(self) -> Path:
        return Path(self.output_file())
