"""An evaluation's result, one typed record: what `xling evaluate` returns (and prints with `--json`), what a
recipe's evaluate step writes beside its results and reads back; and the part of it `xling compare` reads."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from xling.adapters.composition import named_adapters
from xling.errors import XlingError
from xling.fileio import read_json
from xling.records import Record, from_record, set_fields

MAX_COUNT = 10**9  # entities in one sentence: far beyond any real one, and exact in every sum


@dataclass
class TypeScores:
    """One entity type's scores, fractions in [0, 1], and its gold entities."""

    precision: float
    recall: float
    f1: float
    support: int


@dataclass
class EvaluationResult(Record):
    """Entity scores (seqeval, strict IOB2; fractions in [0, 1]), what was scored and with what, and each
    sentence's counts, from which intervals and paired tests are drawn."""

    precision: float
    recall: float
    f1: float
    support: int  # gold entities
    sentences: int
    per_type: dict[str, TypeScores]
    data: str
    lang: str
    task_adapter: str
    setup: str  # as shown: Stack(qu, ner-en)
    decoder: str
    computed_in: str
    runtime: str
    types_not_predicted: list[str]  # gold types the head has no label for: counted as missed
    seen_in_training: int | None  # scored sentences the task was trained on; None: its files do not say
    sentences_digest: str  # which sentences, in order
    sentence_counts: list[list[int]] | None = None  # [correct, predicted, gold] per sentence
    # seqeval's classification_report(output_dict=True) as it gives it: "f1-score", and the three averages
    seqeval_report: dict[str, dict[str, float]] | None = None
    f1_interval: list[float] | None = None  # with --bootstrap: its 95% interval
    bootstrap_samples: int | None = None
    # a recipe's evaluation: its row's label, its step's title and the row it is tested against
    label: str | None = None
    title: str | None = None
    baseline: str | None = None
    adapters: list[str] | None = None  # the setup's adapters by name (unset in results before they were kept)

    @property
    def named_adapters(self) -> list[str]:
        """The setup's adapters by name: as recorded, or read from an older result's setup."""
        return self.adapters if self.adapters is not None else named_adapters(self.setup)

    def to_record(self) -> dict:
        return set_fields(self, {"seen_in_training"})


@dataclass
class ScoredSentences:
    """What a paired comparison reads of an evaluation: which sentences it scored and each one's counts, whole
    numbers with correct at most predicted and gold."""

    sentences_digest: str
    sentence_counts: list[list]  # [correct, predicted, gold] per sentence

    def __post_init__(self):
        if not self.sentence_counts:
            raise XlingError("sentence_counts is empty: no sentence was scored")
        for number, count in enumerate(self.sentence_counts, start=1):
            if len(count) != 3 or not all(type(n) is int and 0 <= n <= MAX_COUNT for n in count):
                raise XlingError(f"sentence {number}'s counts must be [correct, predicted, gold], whole numbers")
            if count[0] > min(count[1], count[2]):
                raise XlingError(f"sentence {number} has more correct entities than predicted or gold ones")

    @classmethod
    def read(cls, path: str) -> ScoredSentences:
        """Those two fields of an evaluation's file (`xling evaluate --bootstrap N --json`, a recipe's step);
        an error names the file and says how to write one."""
        result = read_json(Path(path))
        if not isinstance(result, dict) or "sentence_counts" not in result:
            raise XlingError(
                f"{path} holds no sentence counts: write it with xling evaluate ... --bootstrap 1000 --json"
            )
        if "sentences_digest" not in result:
            raise XlingError(
                f"{path} does not say which sentences it scored (sentences_digest): write it with xling evaluate"
            )
        return from_record(cls, {f.name: result[f.name] for f in fields(cls)}, path)
