"""`report.json`: what a training run trained, on what and how well, saved beside what it trained and read back by
model cards, pushes, exports and recipes as one typed record."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from xling.adapters.files import CONFIG_FILE
from xling.adapters.record import AdapterRecord
from xling.adapters.registry import AdapterChoice
from xling.fileio import read_json
from xling.options import from_record, set_fields
from xling.roles import ENCODER, ROLES, TASK, Role, role_named

REPORT_FILE = "report.json"
RUN_ROLES = (*ROLES, ENCODER)  # what a training run trains
ALWAYS_WRITTEN = {"best"}  # null for a run that chose no step: written as null, not left out


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


@dataclass
class RunReport:
    """One run's report. Every run writes `name`, `role` and what all runs share (xling's version, steps, time,
    precision, parameters, the options and training settings it ran with); each role adds its own fields."""

    name: str
    role: Role
    lang: str | None = None
    model: str | None = None
    xling_version: str | None = None
    steps: int | None = None
    stopped_early: bool | None = None
    training_seconds: float | None = None
    computed_in: str | None = None  # fp32, bf16 or fp16
    total_seconds: float | None = None
    best: BestStep | None = None  # the chosen step's dev scores (task adapters and fusions)
    trainable_parameters: int | None = None
    total_parameters: int | None = None
    options: dict = field(default_factory=dict)  # what the run trained with, as a resumed run must share it
    training: dict = field(default_factory=dict)  # the loop's settings
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
    mix: list[dict] | None = None
    commit: str | None = None
    held_out_perplexity: dict[str, dict[str, float]] | None = None  # per language: before and after
    # what a recipe measured with a task adapter it trained
    recipe: str | None = None
    evaluations: list[dict] | None = None

    @classmethod
    def from_record(cls, record, where: str) -> RunReport:
        """A report from its JSON object, keys and types checked, its role one of xling's; errors name `where`."""
        if isinstance(record, dict) and "role" in record:
            record = {**record, "role": role_named(record["role"], where, RUN_ROLES)}
        return from_record(cls, record, where)

    def to_record(self) -> dict:
        """The JSON object written: the role by name, fields a run leaves unset left out."""
        return set_fields(self, ALWAYS_WRITTEN) | {"role": self.role.name, "best": self.best and asdict(self.best)}

    @property
    def adapter_kind(self) -> str:
        """The kind of adapter the run trained (bottleneck, lora), as its options recorded it."""
        return (self.options.get("adapter") or {}).get("kind") or AdapterChoice.kind


def read_report(directory: Path) -> RunReport:
    """The training report saved beside an adapter; one with its name and role alone from its saved config when it
    has none (an adapter imported from another library)."""
    directory = Path(directory)
    if (directory / REPORT_FILE).is_file():
        return RunReport.from_record(read_json(directory / REPORT_FILE), str(directory / REPORT_FILE))
    if not (directory / CONFIG_FILE).is_file():
        return RunReport(name=directory.name, role=TASK)
    saved = AdapterRecord.read(directory / CONFIG_FILE)
    return RunReport(name=saved.name, role=saved.role, lang=saved.metadata.lang)
