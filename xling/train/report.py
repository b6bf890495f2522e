"""`report.json`: what a training run trained, on what and how well, saved beside what it trained and read back by
model cards, pushes, exports and recipes as one typed record."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path

from xling.adapters.files import CONFIG_FILE
from xling.adapters.record import AdapterRecord
from xling.adapters.registry import AdapterChoice, describe, described
from xling.data.sources import data_name
from xling.errors import XlingError
from xling.fileio import read_json
from xling.models.loading import ModelIdentity, ModelSpec
from xling.options import shown
from xling.records import Record, from_record, set_fields
from xling.roles import ENCODER, FUSION, LANG, TASK, Role, role_named
from xling.train.config import FusionOptions, TaskAdapterOptions, TrainConfig
from xling.train.log_lines import Evaluation
from xling.train.text_config import EncoderOptions, LanguageAdapterOptions

REPORT_FILE = "report.json"
# What each role's runs train with: its command's options, recorded in the report and read back as them
OPTIONS_OF = {LANG: LanguageAdapterOptions, TASK: TaskAdapterOptions, FUSION: FusionOptions, ENCODER: EncoderOptions}
RunOptions = LanguageAdapterOptions | TaskAdapterOptions | FusionOptions | EncoderOptions
ALWAYS_WRITTEN = {"best"}  # null for a run that chose no step: written as null, not left out
# Where and whether to save: no part of what a run trains with. The loop's settings are recorded on their own.
NOT_RECORDED = {"workspace", "overwrite", "restart", "training"}


@dataclass
class Resolved:
    """What a run resolved beside its command's options, recorded with them."""

    other_lang_adapters: dict[str, str] | None = None  # task adapters: each --also-train language's adapter folder
    labels: list[str] | None = None  # task adapters and fusions: the head's labels
    lang_adapter: str | None = None  # fusions: the language adapter's folder below (a task adapter's options say it)
    sources: list[dict] | None = None  # adapted encoders: each source's name and files


def options_record(role: Role, options: RunOptions, resolved: Resolved) -> dict:
    """What a run records of what it trains with, which a resumed run must share: its kind, the command's options
    as the run resolved them (an adapter by its kind and settings, data in memory by what identifies it), then
    what it resolved beside them."""
    recorded = {f.name: _recorded(getattr(options, f.name)) for f in fields(options) if f.name not in NOT_RECORDED}
    return {"kind": role.name, **recorded, **set_fields(resolved)}


def _recorded(value):
    if isinstance(value, AdapterChoice):
        return describe(value.config)
    return asdict(value) if is_dataclass(value) else data_name(value)


def read_options(role: Role, record, training, where: str) -> tuple[RunOptions, Resolved]:
    """A run's options and what it resolved, from the report's `options` and `training` objects."""
    if not isinstance(record, dict) or record.get("kind", role.name) != role.name:
        raise XlingError(f"{where}: expected a JSON object of a {role.name} run's options, not {shown(record)}")
    own = {f.name for f in fields(Resolved)} - {f.name for f in fields(OPTIONS_OF[role])}  # an option is an option
    resolved = from_record(Resolved, {k: v for k, v in record.items() if k in own}, where)
    values = {k: v for k, v in record.items() if k not in own and k != "kind"}
    if values.get("adapter") is not None:  # none: the run trained no adapter (a baseline)
        values["adapter"] = described(values["adapter"], f"{where}: adapter")
    else:
        values.pop("adapter", None)
    if training is not None:
        values["training"] = from_record(TrainConfig, training, f"{where}: training")
    return from_record(OPTIONS_OF[role], values, where), resolved


@dataclass
class BestStep:
    """The evaluation a run selected (task adapters and fusions, on dev): its step and dev scores."""

    step: int
    epoch: float
    seconds: float
    f1: float
    precision: float
    recall: float
    score: float  # what selection compared: the F1

    @classmethod
    def of(cls, evaluation: Evaluation) -> BestStep:
        """The record of the evaluation a run selected, its metrics those of a selecting objective."""
        return from_record(cls, evaluation.to_line(), "the selected evaluation")


@dataclass
class SelfTrainingRound:
    """One round of self-training: the adapter it trained, who labelled its sentences, how many it kept."""

    round: int
    adapter: str
    labelled_by: str
    kept: int  # pseudo-labelled sentences kept
    trained_on: int  # with the --labelled sentences
    best: BestStep | None


SELF_TRAINING_FILE = "self_training.json"


@dataclass
class SelfTrainingReport(Record):
    """What `self_train` returns and writes beside the chosen round's copy (`self_training.json`)."""

    name: str
    lang: str
    source: str
    corpus_files: list[str]
    sentences_tagged: int
    labelled: list[str]
    also_train: list[str]
    threshold: float
    confidence_of: str
    max_per_type: int | None
    rounds: list[SelfTrainingRound]
    chosen_round: int
    seconds: float
    saved_to: str

    @property
    def chosen(self) -> SelfTrainingRound:
        return next(r for r in self.rounds if r.round == self.chosen_round)


@dataclass
class MixedSource:
    """One source of an adapted encoder's mix: a language's text or translation pairs (named `es-qu`)."""

    name: str
    translation_pairs: bool
    data: list[str]  # as given: files, folders, corpus:NAME
    files: list[str]
    train: int  # lines or pairs trained on
    held_out: int
    left_out: int  # lines or pairs that held a sentence of --exclude
    blocks: int
    share: float  # of the rows drawn


@dataclass
class RecipeEvaluation:
    """An evaluation a recipe made with a task adapter it trained: this adapter's seed's F1, and over the seeds."""

    label: str
    data: str
    setup: str
    f1: float
    seeds: list[int] | None = None
    f1_mean: float | None = None
    f1_std: float | None = None


@dataclass
class RunReport:
    """One run's report. Every run writes `name`, `role` and what all runs share (xling's version, steps, time,
    precision, parameters, the options and training settings it ran with); each role adds its own fields."""

    name: str
    role: Role
    lang: str | None = None
    model: str | None = None  # as given to -m
    model_identity: ModelIdentity | None = None  # what that was decided to be (unset in reports before it was kept)
    xling_version: str | None = None
    steps: int | None = None
    stopped_early: bool | None = None
    training_seconds: float | None = None
    computed_in: str | None = None  # fp32, bf16 or fp16
    total_seconds: float | None = None
    best: BestStep | None = None  # the chosen step's dev scores (task adapters and fusions)
    trainable_parameters: int | None = None
    total_parameters: int | None = None
    options: RunOptions | None = None  # what the run trained with, as it resolved them (None: not trained by xling)
    resolved: Resolved = field(default_factory=Resolved)  # what it resolved beside them
    saved_to: str | None = None
    # task adapters and fusions
    task: str | None = None
    method: str | None = None
    lang_adapter: str | None = None
    labels: list[str] | None = None
    train_sentences: int | None = None
    also_train_sentences: dict[str, int] | None = None
    dev_sentences: int | None = None
    adapters: list[str] | None = None  # a fusion's task adapters
    # language adapters
    mlm_head: str | None = None  # pretrained or fresh
    corpus_files: list[str] | None = None
    lines: dict[str, int] | None = None  # train and held_out
    tokens_seen: int | None = None
    held_out_perplexity_before: float | None = None
    held_out_perplexity_after: float | None = None
    vocab_from_corpus: bool | None = None
    # adapted encoders
    base_model: str | None = None
    temperature: float | None = None
    mix: list[MixedSource] | None = None
    commit: str | None = None
    held_out_perplexity: dict[str, dict[str, float]] | None = None  # per language: before and after
    # what a recipe measured with a task adapter it trained
    recipe: str | None = None
    evaluations: list[RecipeEvaluation] | None = None

    @classmethod
    def from_record(cls, record, where: str) -> RunReport:
        """A report from its JSON object, keys and types checked, its role one of xling's and its options those of
        the role's command (the loop's settings among them); errors name `where`."""
        if not isinstance(record, dict) or "role" not in record:
            return from_record(cls, record, where)  # the error: not an object, or no role
        record = dict(record, role=role_named(record["role"], where, tuple(OPTIONS_OF)))
        options, training = record.pop("options", None), record.pop("training", None)
        if options is not None:
            record["options"], record["resolved"] = read_options(record["role"], options, training, f"{where}: options")
        return from_record(cls, record, where)

    def to_record(self) -> dict:
        """The JSON object written: the role by name, the options as the run recorded them and the loop's settings
        beside them, fields a run leaves unset left out."""
        written = set_fields(self, ALWAYS_WRITTEN) | {"role": self.role.name}
        del written["resolved"]
        if self.options is not None:
            written["options"] = options_record(self.role, self.options, self.resolved)
            written["training"] = asdict(self.options.training)
        return written

    @property
    def base(self) -> ModelIdentity:
        """The base model as training decided it; an older report's `model` decided again, here only."""
        return self.model_identity or ModelSpec.parse(self.model or "").identity

    @classmethod
    def read(cls, directory: Path) -> RunReport:
        """The training report saved beside an adapter; one with its name and role alone from its saved config when it
        has none (an adapter imported from another library)."""
        directory = Path(directory)
        if (directory / REPORT_FILE).is_file():
            return cls.from_record(read_json(directory / REPORT_FILE), str(directory / REPORT_FILE))
        if not (directory / CONFIG_FILE).is_file():
            return cls(name=directory.name, role=TASK)
        saved = AdapterRecord.read(directory / CONFIG_FILE)
        return cls(name=saved.name, role=saved.role, lang=saved.metadata.lang)

    @property
    def dev(self) -> str | None:
        """The dev data the run selected on (task adapters and fusions)."""
        return self.options.dev if isinstance(self.options, (TaskAdapterOptions, FusionOptions)) else None

    @property
    def adapter_kind(self) -> str:
        """The kind of adapter the run trained (bottleneck, lora); the default kind where its options choose none."""
        trains_one = isinstance(self.options, (TaskAdapterOptions, LanguageAdapterOptions))
        return self.options.adapter.kind if trains_one else AdapterChoice.kind
