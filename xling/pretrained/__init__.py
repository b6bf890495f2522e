"""The adapters shipped inside xling, for the embedded default encoder: a read-only workspace in the package.

    xling/pretrained/<model>/lang/<lang>/      language adapters (without their masked-LM head)
    xling/pretrained/<model>/task/<task>-<lang>/  task adapters, each with `pretrained.json` and its card
    xling/pretrained/<model>/head/mlm/         the masked-LM head of an encoder that has none, under which
                                               language adapters train (`python -m xling.shipping.head`)

The workspace falls back to them for a name it does not hold, and the tagger says so in one line on standard
error. `recipes/pretrained.toml` trains them and its last step (`run = "ship"`, `xling.shipping`) writes them here.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from xling.errors import XlingError
from xling.fileio import file_sha256, read_json
from xling.records import from_record
from xling.roles import TASK, AdapterFolders, Role, role_named

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


@dataclass
class Fp16Check:
    """On how many silver-dev sentences a setup's weights stored in fp16 tag as in fp32."""

    data: str
    setup: str
    sentences: int
    equal: int

    @property
    def passed(self) -> bool:
        return self.equal == self.sentences


NESTED = {"scores": Score, "data": CorpusRecord, "fp16_check": Fp16Check}  # the record's lists of records


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
    fp16_check: list[Fp16Check] = field(default_factory=list)
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

    @classmethod
    def read(cls, directory: Path) -> PretrainedRecord:
        """The record of the shipped adapter in `directory` (its `pretrained.json`)."""
        file = Path(directory) / RECORD_FILE
        return cls.from_record(read_json(file), str(file))

    def headline(self, setup: str | None = None) -> Score | None:
        """The score the one-line notice gives, of `setup` (None: any): the first, which shipping makes the
        held-out figure (`xling.shipping.adapters.SETUPS`)."""
        return next((s for s in self.scores if setup is None or s.setup == setup), None)


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


def notice(directories: AdapterFolders, reasons: list[str] = (), zero_shot: bool = False) -> str | None:
    """One line for standard error: why the tagger is what it is (`reasons`, from the tagger), which adapters it
    tags with where that needs saying (shipped ones always; the workspace's own where there is a reason), and the
    shipped task adapter's held-out F1 in the setup used, where it was measured so (`directories`: the tagger's
    adapters by role; `zero_shot`: the task adapter is another language's)."""
    folders = directories.by_role()
    shipped = {role: folder for role, folder in folders if is_pretrained(folder)}
    if not shipped and not reasons:
        return None
    own = [folder.name for role, folder in folders if role not in shipped]
    task_shipped = TASK in shipped
    transfer = " (zero-shot transfer)" if zero_shot else ""
    parts = [f"your {', '.join(own)}{transfer if not task_shipped else ''}"] if reasons and own else []
    if shipped:
        names = ", ".join(f"{d.parent.name}/{d.name}" for d in shipped.values())
        parts.append(f"the adapters shipped with xling ({names}){transfer if task_shipped else ''}")
    said = "".join(f"{reason}: " for reason in reasons)
    line = f"xling: {said}tagging with {' and '.join(parts)}" if parts else f"xling: {said.removesuffix(': ')}"
    if not task_shipped or len(shipped) < len(folders):  # figures are of the shipped adapters together
        return line
    task = directories.task
    setup = f"Stack({directories.lang.name}, {task.name})" if directories.lang else task.name
    score = PretrainedRecord.read(shipped[TASK]).headline(setup)
    if score is None:
        return f"{line}: no figure for {setup}"
    low, high = (100 * bound for bound in score.f1_interval)
    where = f"{score.sentences:,} {score.data.removeprefix('corpus:')} sentences"
    return f"{line}: {score.setup} F1 {100 * score.f1:.1f} [{low:.1f}, {high:.1f}] on {where}"


def say_notice(directories: AdapterFolders, reasons: list[str] = (), zero_shot: bool = False) -> None:
    if line := notice(directories, reasons, zero_shot):
        print(line, file=sys.stderr)


def check_shipped_files(directory: Path) -> None:
    """The files of a shipped adapter are those its record names (by sha256), or one line saying which is not."""
    record = PretrainedRecord.read(directory)
    for name, digest in record.files.items():
        if not (Path(directory) / name).is_file() or file_sha256(Path(directory) / name) != digest:
            raise XlingError(f"{directory / name} is not the file its {RECORD_FILE} names (sha256 differs)")
