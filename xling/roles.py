"""The roles of trained adapters: language adapters, task adapters and fusions, each kept in its own folder of
the workspace."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xling.errors import XlingError
from xling.options import shown


@dataclass(frozen=True)
class Role:
    """What a trained adapter is for: `name` is its workspace folder (and a recipe's word for it), `word` what its
    reports, saved metadata and model card call it; `title` and `how` say what it is and how to train one."""

    name: str
    word: str
    title: str
    how: str

    def __str__(self) -> str:
        return self.name


LANG = Role("lang", "language", "language adapter", "xling train-lang {name} CORPUS")
TASK = Role("task", "task", "task adapter", "xling train-task ner --lang LANG --train FILE --dev FILE")
FUSION = Role("fusion", "fusion", "fusion", "xling train-fusion ner --lang LANG --adapters A,B --train FILE --dev FILE")
ROLES = (LANG, TASK, FUSION)
# not an adapter: a whole encoder adapted by continued masked-LM training, a model folder that `-m` takes
ENCODER = Role("encoder", "encoder", "adapted encoder", "xling train-encoder {name} CORPUS")
# shipped for an encoder that has none: the masked-LM head language adapters train under
HEAD = Role("head", "masked-LM head", "masked-LM head", "python -m xling.shipping.head")
NAMED = {role.name: role for role in (*ROLES, ENCODER, HEAD)}


@dataclass(frozen=True)
class AdapterFolders:
    """The folders a tagger's adapters were loaded from, by role: what its notice names and what a copy that
    travels (spaCy's) takes."""

    task: Path | None = None
    fusion: Path | None = None
    lang: Path | None = None

    def by_role(self) -> list[tuple[Role, Path]]:
        """The folders there are, the top adapter's first."""
        return [(role, folder) for role in (TASK, FUSION, LANG) if (folder := getattr(self, role.name)) is not None]


def role_named(name, where: str, among: tuple[Role, ...] = tuple(NAMED.values())) -> Role:
    """The role `among` those given that a record names, or one line naming `where` and those roles."""
    found = next((role for role in among if role.name == name), None)
    if found is None:
        raise XlingError(f"{where}: role must be one of {', '.join(r.name for r in among)}, not {shown(name)}")
    return found


TASK_FILE = "task.json"  # in a task adapter's folder: the task it was trained for (`xling.trained_tasks`)


def task_record(directory: Path) -> dict[str, str]:
    """A task adapter's `task.json` as a file to write beside it in another layout (the library ignores it, xling
    reads the folder back as the task it is); nothing for another adapter."""
    file = Path(directory) / TASK_FILE
    return {TASK_FILE: file.read_text()} if file.is_file() else {}
