"""The adapters shipped inside xling, for the embedded default encoder: a read-only workspace in the package.

    xling/pretrained/<model>/lang/<lang>/      language adapters (without their masked-LM head)
    xling/pretrained/<model>/task/<task>-<lang>/  task adapters, each with `pretrained.json` and its card
    xling/pretrained/<model>/head/mlm/         the masked-LM head of an encoder that has none, under which
                                               language adapters train (`python -m xling.recipes.mlm_head`)

The workspace falls back to them for a name it does not hold, and the tagger says so in one line on standard
error. `recipes/pretrained.toml` trains them and `python -m xling.recipes.pretrained` writes them here.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from xling.errors import XlingError
from xling.fileio import file_sha256, read_json
from xling.options import from_record
from xling.roles import Role, role_named

PRETRAINED_ROOT = Path(__file__).parent
RECORD_FILE = "pretrained.json"
MLM_HEAD_FILE = "mlm_head.safetensors"


@dataclass
class Score:
    """One evaluation of the shipped weights: F1 with its 95% interval (0-1) on `sentences` sentences."""

    data: str
    setup: str
    f1: float
    f1_interval: list[float]
    sentences: int


@dataclass
class CorpusRecord:
    """A corpus the shipped weights were trained on: its catalogue name, public source and licence."""

    corpus: str
    source: str | None
    licence: str | None


NESTED = {"scores": Score, "data": CorpusRecord}  # the record's lists of records


@dataclass
class PretrainedRecord:
    """`pretrained.json`: how a shipped adapter was made, how well it tags, and the hashes of its files."""

    name: str
    role: Role
    recipe: str
    seed: int
    commit: str
    stored_in: str  # fp16 or fp32
    files: dict[str, str]  # file name -> sha256
    data: list[CorpusRecord] = field(default_factory=list)
    scores: list[Score] = field(default_factory=list)
    fp16_check: list[dict] = field(default_factory=list)  # per setup: silver-dev sentences fp16 tags as fp32 does
    perplexity: dict[str, float] = field(default_factory=dict)  # a masked-LM head: held-out, per language

    @classmethod
    def from_record(cls, record, where: str) -> PretrainedRecord:
        """The record of a JSON object, its role, scores and corpora read as theirs; errors name `where`."""
        if isinstance(record, dict):
            record = dict(record)
            if "role" in record:
                record["role"] = role_named(record["role"], where)
            for key, kind in NESTED.items():
                if isinstance(record.get(key), list):
                    record[key] = [from_record(kind, value, f"{where}: {key}") for value in record[key]]
        return from_record(cls, record, where)

    def to_record(self) -> dict:
        return asdict(self) | {"role": self.role.name}

    def headline(self) -> Score | None:
        """The score the one-line notice gives: silver-dev's if there is one."""
        found = [s for s in self.scores if s.data.endswith("silver-dev")] or self.scores
        return found[0] if found else None


def pretrained_dir(model_label: str) -> Path | None:
    """The shipped adapters for a base model (its workspace label), or None: only the embedded default has any."""
    folder = PRETRAINED_ROOT / model_label
    return folder if folder.is_dir() else None


def shipped_mlm_head(model_label: str) -> Path | None:
    """The weights file of the masked-LM head xling ships for a base model, or None."""
    root = pretrained_dir(model_label)
    file = root / "head" / "mlm" / MLM_HEAD_FILE if root else None
    return file if file and file.is_file() else None


def is_pretrained(directory: Path) -> bool:
    return Path(directory).resolve().is_relative_to(PRETRAINED_ROOT.resolve())


def read_record(directory: Path) -> PretrainedRecord:
    file = Path(directory) / RECORD_FILE
    return PretrainedRecord.from_record(read_json(file), str(file))


def notice(directories: list[Path], reasons: list[str] = ()) -> str | None:
    """One line for standard error saying why the tagger is what it is (`reasons`, from the tagger) and which of
    its adapters are shipped ones, with the shipped task adapter's held-out F1 where it was measured in the setup
    used (`directories`: all of the tagger's adapters)."""
    said = "".join(f"{reason}: " for reason in reasons)
    shipped = [Path(d) for d in directories if is_pretrained(d)]
    if not shipped:
        return f"xling: {said.removesuffix(': ')}" if said else None
    names = ", ".join(f"{d.parent.name}/{d.name}" for d in shipped)
    tasks = [d for d in shipped if d.parent.name == "task"]
    score = read_record(tasks[0]).headline() if tasks else None
    stacked = any(Path(d).parent.name == "lang" for d in directories)
    if score and score.setup.startswith("Stack(") and not stacked:  # its figure is for a setup not used here
        return f"xling: {said}tagging with the adapters shipped with xling ({names}), without a language adapter: no figure"
    told = (
        f": {score.setup} F1 {100 * score.f1:.1f} [{100 * score.f1_interval[0]:.1f}, {100 * score.f1_interval[1]:.1f}]"
        f" on {score.sentences} {score.data.rsplit('/', 1)[-1]} sentences"
        if score
        else ""
    )
    return f"xling: {said}tagging with the adapters shipped with xling ({names}){told}"


def say_notice(directories: list[Path], reasons: list[str] = ()) -> None:
    if line := notice(directories, reasons):
        print(line, file=sys.stderr)


def check_shipped_files(directory: Path) -> None:
    """The files of a shipped adapter are those its record names (by sha256), or one line saying which is not."""
    record = read_record(directory)
    for name, digest in record.files.items():
        if not (Path(directory) / name).is_file() or file_sha256(Path(directory) / name) != digest:
            raise XlingError(f"{directory / name} is not the file its {RECORD_FILE} names (sha256 differs)")
