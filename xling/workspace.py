"""The workspace: where trained adapters live, per base model.

    <workspace>/<model>/lang/<lang>/        language adapters (with their masked-LM head)
    <workspace>/<model>/task/<task>-<lang>/ task adapters (with their head and labels)
    <workspace>/<model>/fusion/<name>/      fusion layers
    <workspace>/<model>/encoder/<name>/     encoders adapted from the model (a model folder: `-m` takes it)
    <workspace>/<model>/<role>/<name>.partial/  an unfinished run: checkpoints and log

The workspace is `--workspace`, else `$XLING_HOME/workspace`, else `./xling-workspace`. For a name it does not
hold, the adapters shipped with xling for the embedded model (`xling.pretrained`) stand in: the workspace's own
always come first.

This module alone turns names into paths. A name is letters, digits, '_' and '-' (the
names of the adapters inside the model too), so whatever xling writes or replaces stays inside the workspace. Where a
trained adapter is asked for, a bare name (`qu`) always means the workspace's; only what
is written as a path (`./qu`, `/x/y`, `~/z`) is taken as a directory, and `hf:ORG/NAME` as
a Hugging Face Hub repository (fetched into the Hub's cache).
"""

from __future__ import annotations

import re
from pathlib import Path

from xling.adapters.composition import check_name
from xling.errors import XlingError
from xling.fileio import MAX_FILE_NAME, MAX_NAME_BYTES, too_long_name
from xling.models import model_label
from xling.paths import default_workspace
from xling.pretrained import is_pretrained, pretrained_dir
from xling.roles import ENCODER, FUSION, LANG, ROLES, TASK, Role

LANG_CODE = re.compile(r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$")
RUN_SUFFIX = ".partial"
LANG_ADAPTER_HELP = "Language adapter to stack below: a name, a directory or hf:ORG/NAME (default: --lang)."


def check_lang(code: str) -> str:
    """The code with its language part in lower case (`QU` is `qu`), or an error."""
    if not LANG_CODE.match(code):
        raise XlingError(
            f"invalid language code {code!r}: use an ISO 639 code such as qu, quz, es or en (letters, then optional -subtags)"
        )
    primary = len(re.match(r"[A-Za-z]+", code).group())
    return code[:primary].lower() + code[primary:]


MAX_PATH = 1024  # characters of a relative path a file gives
MAX_TITLE = 100  # characters of a recipe's name or a step's title


def inside(base: Path, relative: str, what: str) -> Path:
    """`base / relative` for a name or relative path that a file (not a command-line option) gives: absolute
    paths, `~` and `..` are refused, so that what it names stays under `base`."""
    if not isinstance(relative, str) or not relative.strip():
        raise XlingError(f"{what} must be a non-empty relative path, not {relative!r}")
    path = Path(relative)
    if path.is_absolute() or relative.startswith("~") or ".." in path.parts or "\\" in relative:
        raise XlingError(f"{what} {relative!r} must be a path inside {base} (no absolute path, ~ or ..)")
    if any(ord(c) < 32 or c == "\x7f" for c in relative):
        raise XlingError(f"{what} {relative!r} holds control characters")
    if len(relative) > MAX_PATH or any(len(part.encode()) > MAX_FILE_NAME for part in path.parts):
        raise XlingError(
            f"{what} {relative[:40]!r}... is too long: at most {MAX_PATH} characters, {MAX_FILE_NAME} bytes a name"
        )
    return no_link(base, path, what)


def no_link(base: Path, relative: Path, what: str) -> Path:
    """`base / relative`, refused in one line where a folder or file on the way below `base` is a symbolic link:
    what xling writes there would land wherever the link points, outside the workspace."""
    at = base
    for part in relative.parts:
        at = at / part
        if at.is_symlink():
            raise XlingError(f"{what}: {at} is a symbolic link, which xling does not write through; remove it")
    return at


def file_name(name: str, what: str) -> str:
    """A name that becomes one file name (a recipe's name, a step's title, with `.json` added): one plain path
    component of at most MAX_TITLE characters."""
    if not isinstance(name, str) or "/" in name or name.startswith("."):
        raise XlingError(f"{what} {name!r} must be text without '/' that does not start with '.'")
    if len(name) > MAX_TITLE:
        raise XlingError(f"{what} {name[:40]!r}... is {len(name)} characters long; at most {MAX_TITLE}")
    inside(Path("."), name, what)
    return name


def is_hub_name(spec: str) -> bool:
    """`hf:ORG/NAME`: an adapter on the Hugging Face Hub."""
    return spec.startswith("hf:")


def is_path(spec: str) -> bool:
    """Written as a path rather than a name: `./qu`, `../x`, `/x/y`, `~/z`, `a/b`."""
    return spec.startswith((".", "~")) or "/" in spec or "\\" in spec


class Workspace:
    def __init__(self, root: str | Path | None, model: str):
        self.root = Path(root).expanduser() if root else default_workspace()
        if long := too_long_name(self.root):
            raise XlingError(
                f"workspace {long[:40]}...: a folder name is at most {MAX_NAME_BYTES} bytes; give a shorter -w"
            )
        for folder in (self.root, *self.root.parents):
            if folder.exists() and not folder.is_dir():
                raise XlingError(f"workspace {self.root}: {folder} is a file, not a folder; give a folder with -w")
            if folder.exists():
                break
        self.model = model
        self.model_dir = self.root / model_label(model)
        self.pretrained = pretrained_dir(model_label(model))  # None for any model but the embedded default

    def _shipped(self, role: Role, name: str) -> Path | None:
        if self.pretrained and (self.pretrained / role.name / name).is_dir():
            return self.pretrained / role.name / name
        return None

    def _elsewhere(self, role: Role) -> str:
        """Where else adapters of `role` were looked for, or could be: the shipped ones, the demo's workspace."""
        shipped = sorted(p.name for p in (self.pretrained / role.name).glob("*")) if self.pretrained else []
        said = (
            f"; xling ships {role.title}s {', '.join(shipped)}" if shipped else f"; xling ships none for {self.model}"
        )
        demo = default_workspace() / "demo"
        if (demo / self.model_dir.name).is_dir() and demo.resolve() != self.root.resolve():
            said += f"; the demo's adapters are in {demo} (give -w {demo})"
        return said

    def adapter_dir(self, role: Role, name: str) -> Path:
        assert role in (*ROLES, ENCODER)
        return self.model_dir / role.name / check_name(name)

    def run_dir(self, role: Role, name: str) -> Path:
        return self.model_dir / role.name / f"{check_name(name)}{RUN_SUFFIX}"

    def _trained(self, role: Role, name: str) -> Path:
        """A trained adapter's directory (a name in the workspace, a path, or `hf:ORG/NAME` on the Hugging Face
        Hub), or an error saying how to train it."""
        if is_hub_name(name):
            from xling.hub import download  # huggingface_hub loads slowly: only when an adapter is fetched

            return download(name)
        if is_path(name):
            if not Path(name).expanduser().is_dir():
                raise XlingError(f"no such directory: {name}")
            return Path(name).expanduser().resolve()
        directory = self.adapter_dir(role, name)
        if not directory.is_dir() and (shipped := self._shipped(role, name)):
            return shipped
        if not directory.is_dir():
            raise XlingError(
                f"no {role.title}{' for' if role is LANG else ''} {name!r} in {directory.parent}"
                f"{self._elsewhere(role)}; if another workspace holds it, give that with -w FOLDER; else train it "
                f"with: {role.how.format(name=name)}"
            )
        return directory

    def task_adapter_name(
        self, task: str, lang: str, adapter: str | None = None, planned: set[str] = frozenset()
    ) -> str:
        """The task adapter that tagging `lang` uses: `adapter` if given, else `<task>-<lang>` if the workspace
        has one or `planned` will (trained few-shot on the language), else `<task>-en` (zero-shot transfer from
        English), else the only `<task>-*` adapter there is; with none in the workspace, the shipped `<task>-<lang>`,
        else the shipped `<task>-en`."""
        if adapter:
            return adapter
        root = self.model_dir / TASK.name
        for candidate in (f"{task}-{lang}", f"{task}-en"):
            if candidate in planned or (root / candidate).is_dir():
                return candidate
        trained = (
            sorted(
                {p.name for p in root.glob(f"{task}-*") if p.is_dir() and not p.name.endswith(RUN_SUFFIX)}
                | {name for name in planned if name.startswith(f"{task}-")}
            )
            if root.is_dir() or planned
            else []
        )
        if len(trained) == 1:
            return trained[0]
        if not trained and (shipped := [c for c in (f"{task}-{lang}", f"{task}-en") if self._shipped(TASK, c)]):
            return shipped[0]
        if not trained:
            raise XlingError(
                f"no {task} task adapter in {root}{self._elsewhere(TASK)}; train one with: "
                f"xling train-task {task} --lang en --train FILE --dev FILE"
            )
        raise XlingError(
            f"several {task} task adapters in {root} ({', '.join(trained)}); choose one with --task-adapter"
        )

    def lang_adapter(self, lang: str, under: Path | None = None) -> Path:
        """The language adapter `lang`; `under` a shipped task adapter, the shipped one it was trained over."""
        if under is not None and is_pretrained(under) and (shipped := self._shipped(LANG, lang)):
            return shipped
        return self._trained(LANG, lang)

    def task(self, name: str) -> Path:
        return self._trained(TASK, name)

    def fusion(self, name: str) -> Path:
        return self._trained(FUSION, name)

    def adapter(self, name: str) -> Path:
        """Any trained adapter, fusion or task by name (whichever kind has it), directory or Hub name."""
        if is_hub_name(name) or is_path(name):
            return self._trained(TASK, name)
        found = [self.adapter_dir(role, name) for role in ROLES if self.adapter_dir(role, name).is_dir()]
        found = found or [shipped for role in ROLES if (shipped := self._shipped(role, name))]
        if not found:
            raise XlingError(f"no adapter {name!r} in {self.model_dir} (looked in {', '.join(map(str, ROLES))})")
        if len(found) > 1:
            raise XlingError(
                f"{name!r} names several adapters in {self.model_dir}: {', '.join(map(str, found))}; give the directory"
            )
        return found[0]
