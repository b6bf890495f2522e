"""What a step's `run = ...` is: a `RunKind` gives the command's options, the adapter the step saves, the adapters
it needs, and how it runs. Every method takes the step's options and, where it needs more, one `StepContext`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from xling.analysis.options import ANALYSES, AnalyzeOptions
from xling.errors import XlingError
from xling.fileio import write_json_atomic
from xling.lazy import later
from xling.methods import METHODS
from xling.options import build, defaults, options_of
from xling.projection.options import MatchOptions, ProjectOptions, TranslateOptions
from xling.projection.silver import REPORT
from xling.recipes.reading import RUN_LEVEL, Recipe, Step
from xling.roles import FUSION, LANG, TASK, Role
from xling.shipping.options import SHIPPED, ShipOptions
from xling.tagging.options import EvaluationOptions, TagOptions
from xling.train.config import FusionOptions, SelfTrainingOptions, SoupOptions, TaskAdapterOptions
from xling.train.text_config import LanguageAdapterOptions
from xling.workspace import Workspace

if TYPE_CHECKING:
    from xling.scoring.result import EvaluationResult
    from xling.train.progress import TrainingProgress


Adapter = tuple[Role, str]  # (role, name): (LANG, "qu"), (TASK, "ner-en"), (FUSION, ...)


@dataclass(frozen=True)
class StepContext:
    """Where a step runs: its recipe and workspace, and where it reports (`progress`: the command line's bar)."""

    step: Step
    recipe: Recipe
    workspace: Workspace
    console: Console | None = None
    progress: TrainingProgress | None = None


@dataclass(frozen=True)
class RunKind(ABC):
    """A kind of step. `scores`: its result is a row of the results table; `writes`: it writes an output file."""

    options: type
    scores = False
    writes = False

    @abstractmethod
    def perform(self, options, context: StepContext) -> EvaluationResult | None:
        """Run the step: a scoring step returns its result."""

    def saves(self, options) -> Adapter | None:
        return None

    def needs(self, options, context: StepContext) -> list[Adapter]:
        return []

    def finished(self, output: Path) -> Path:
        """The file whose presence says a writing step finished: its output, or a file the output folder holds."""
        return output


class Saving(RunKind):
    """A step that saves an adapter, which later steps may need: `saves` names it."""


@dataclass(frozen=True)
class Training(Saving):
    """A step that trains and saves an adapter, printing the trainer's report as `summary` puts it; a recipe's
    seeds set its seed."""

    train: Callable
    summary: Callable

    def perform(self, options, context: StepContext) -> None:
        context.console.print(self.summary(self.train(options, context.console, context.progress)))

    def saves(self, options) -> Adapter:
        return (TASK, options.run_name())


class LanguageTraining(Training):
    def saves(self, options) -> Adapter:
        return (LANG, options.run_name())


class TaskTraining(Training):
    def needs(self, options, context: StepContext) -> list[Adapter]:
        needs = []
        if METHODS[options.method].adapters and options.use_lang_adapter:
            needs.append((LANG, options.lang_adapter or options.lang))
        return needs + ([(TASK, options.init_from)] if options.init_from else [])


class FusionTraining(Training):
    def saves(self, options) -> Adapter:
        return (FUSION, options.run_name())

    def needs(self, options, context: StepContext) -> list[Adapter]:
        return [(TASK, a) for a in options.adapters] + ([(LANG, options.lang)] if options.use_lang_adapter else [])


class SelfTraining(Training):
    def needs(self, options, context: StepContext) -> list[Adapter]:
        return [(TASK, options.source), (LANG, options.lang)]


class Souping(Saving):
    """`xling soup`: task adapters trained alike averaged into one (it trains nothing: no seed of its own)."""

    def perform(self, options: SoupOptions, context: StepContext) -> None:
        folder = later("xling.train.soup:soup")(options)
        context.console.print(later("xling.train.soup:soup_summary")(options, folder), highlight=False)

    def saves(self, options: SoupOptions) -> Adapter:
        return (TASK, options.name)

    def needs(self, options: SoupOptions, context: StepContext) -> list[Adapter]:
        return [(TASK, name) for name in options.adapters]


class Tagging(RunKind):
    """A step that tags with a trained setup: a fusion, or the task adapter `xling tag` would find (the steps
    before count as trained; `ner-en` when none is, which validation reports) with those of its ensemble, and the
    language adapter under it."""

    def needs(self, options, context: StepContext) -> list[Adapter]:
        spec = options.tagger
        if spec.fusion:
            needs = [(FUSION, spec.fusion)]
        else:
            trained = earlier_tasks(context.recipe, context.step)
            try:
                adapter = context.workspace.task_adapter_name(spec.task, spec.lang, spec.task_adapter, trained)
            except XlingError:
                adapter = "ner-en"
            needs = [(TASK, adapter)] + [(TASK, name) for name in spec.ensemble]
        if spec.use_lang_adapter:
            needs.append((LANG, spec.lang_adapter or spec.lang))
        return needs


class Evaluation(Tagging):
    scores = True

    def perform(self, options: EvaluationOptions, context: StepContext) -> EvaluationResult:
        return later("xling.tagging.evaluate:evaluate")(options)


class TagFile(Tagging):
    writes = True

    def perform(self, options: TagOptions, context: StepContext) -> None:
        from xling.tagging.files import tag_file

        tag_file(options, context.console)


@dataclass(frozen=True)
class SilverFolder(Tagging):
    """A step that writes a folder of silver CoNLL whole or not at all, its report last (`xling project`,
    `translate`, `match`); `tags` says whether these options load a tagger."""

    make: Callable = None
    tags: Callable = lambda options: True
    writes = True

    def finished(self, output: Path) -> Path:
        return output / REPORT

    def perform(self, options, context: StepContext) -> None:
        self.make(options, context.console)

    def needs(self, options, context: StepContext) -> list[Adapter]:
        return super().needs(options, context) if self.tags(options) else []


class AnalysisStep(Tagging):
    writes = True

    def perform(self, options: AnalyzeOptions, context: StepContext) -> None:
        from xling.analysis.reports import run_analysis, summary

        shown = summary(options, run_analysis(options, context.console))
        if shown is not None:
            Console().print(shown)

    def needs(self, options: AnalyzeOptions, context: StepContext) -> list[Adapter]:
        """What it tags with; nothing for an analysis that tags nothing (params)."""
        return super().needs(options, context) if ANALYSES[options.analysis].needs else []


class Shipping(RunKind):
    """`recipes/pretrained.toml`'s last step: the adapters its earlier steps trained, written into the package,
    and the record of what shipped in the recipe's results."""

    writes = True

    def perform(self, options: ShipOptions, context: StepContext) -> None:
        shipped = later("xling.shipping.adapters:ship")(context.workspace.root, options.model)
        write_json_atomic(Path(options.output), shipped)
        context.console.print(f"shipped {', '.join(shipped)} into the package")

    def needs(self, options: ShipOptions, context: StepContext) -> list[Adapter]:
        return list(SHIPPED)


RUNS: dict[str, RunKind] = {
    "train-lang": LanguageTraining(
        LanguageAdapterOptions,
        later("xling.train.language:train_language_adapter"),
        later("xling.train.summary:language_report_table"),
    ),
    "train-task": TaskTraining(
        TaskAdapterOptions, later("xling.train.task:train_task_adapter"), later("xling.train.summary:selection_summary")
    ),
    "train-fusion": FusionTraining(
        FusionOptions,
        later("xling.train.fusion:train_fusion"),
        lambda report: later("xling.train.summary:selection_summary")(report, "fusion "),
    ),
    "self-train": SelfTraining(
        SelfTrainingOptions,
        later("xling.train.self_training:self_train"),
        later("xling.train.summary:self_training_summary"),
    ),
    "soup": Souping(SoupOptions),
    "evaluate": Evaluation(EvaluationOptions),
    "tag": TagFile(TagOptions),
    "analyze": AnalysisStep(AnalyzeOptions),
    "project": SilverFolder(ProjectOptions, later("xling.projection.project:project")),
    "translate": SilverFolder(TranslateOptions, later("xling.projection.translate:translate"), lambda options: False),
    "match": SilverFolder(MatchOptions, later("xling.projection.matching:match"), lambda options: options.veto),
    "ship": Shipping(ShipOptions),
}

# A step's keys are its command's options, named as on the command line.
KEYS = {run: set(options_of(defaults(kind.options))) - RUN_LEVEL for run, kind in RUNS.items()}
KEYS["evaluate"] |= {"label", "baseline"}  # the row's name in the results table; an earlier row to test it against


def step_options(step: Step, **run_level):
    """A step's options dataclass, built as the command line builds it."""
    return build(RUNS[step.run].options, {**step.options, **run_level})


def trains(step: Step) -> bool:
    return step.run in RUNS and isinstance(RUNS[step.run], Training)


def produces(step: Step) -> Adapter | None:
    """(role, name) of the adapter a saving step saves; `name` names it, else the command's default. Other
    steps save none, said without building their options (every step asks this of all steps before it)."""
    return RUNS[step.run].saves(step_options(step)) if isinstance(RUNS[step.run], Saving) else None


def earlier_tasks(recipe: Recipe, step: Step) -> set[str]:
    """The task adapters that the steps before `step` train."""
    return {made[1] for made in products(recipe)[: step.number - 1] if made and made[0] is TASK}


def products(recipe: Recipe) -> list[Adapter | None]:
    """What each step saves, worked out once per recipe (each step asks it of every step before it: validating
    stays linear in the steps)."""
    cached = recipe.__dict__.get("_products")
    if cached is None or len(cached) != len(recipe.steps):
        cached = recipe.__dict__["_products"] = [produces(s) for s in recipe.steps]
    return cached


def requires(step: Step, recipe: Recipe, workspace: Workspace) -> list[Adapter]:
    """The adapters a step needs, as (role, name)."""
    return RUNS[step.run].needs(step_options(step), StepContext(step, recipe, workspace))
