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

from pathlib import Path

from xling.adapters.composition import check_name
from xling.errors import XlingError
from xling.fileio import MAX_NAME_BYTES, too_long_name
from xling.models import model_label
from xling.names import is_hub_name, is_path
from xling.paths import default_workspace
from xling.pretrained import RECORD_FILE, is_pretrained, pretrained_dir
from xling.roles import ENCODER, FUSION, LANG, ROLES, TASK, Role

RUN_SUFFIX = ".partial"
LANG_ADAPTER_HELP = "Language adapter to stack below: a name, a directory or hf:ORG/NAME (default: --lang)."


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

    @property
    def roots(self) -> list[Path]:
        """Where adapters are looked for, in this order: the workspace's own, then those shipped for its model."""
        return [self.model_dir, *([self.pretrained] if self.pretrained else [])]

    def find(self, role: Role, name: str, roots: list[Path] | None = None) -> Path | None:
        """The directory of adapter `name` of `role` in the first of `roots` (by default `self.roots`) holding it."""
        check_name(name)
        return next((d for root in roots or self.roots if (d := root / role.name / name).is_dir()), None)

    def shipped(self) -> list[tuple[str, str, Path]]:
        """(role folder, name, directory) of everything shipped for the model (adapters and a masked-LM head): what
        the roots after the workspace's own hold."""
        found = (d for root in self.roots[1:] for d in sorted(root.glob("*/*")) if (d / RECORD_FILE).is_file())
        return [(d.parent.name, d.name, d) for d in found]

    def _elsewhere(self, role: Role) -> str:
        """Where else adapters of `role` were looked for, or could be: the shipped ones, the demo's workspace."""
        shipped = sorted(name for folder, name, _ in self.shipped() if folder == role.name)
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

    def _trained(self, role: Role, name: str, roots: list[Path] | None = None) -> Path:
        """A trained adapter's directory (a name found in `roots`, a path, or `hf:ORG/NAME` on the Hugging Face
        Hub), or an error saying how to train it."""
        if is_hub_name(name):
            from xling.hub import download  # huggingface_hub loads slowly: only when an adapter is fetched

            return download(name)
        if is_path(name):
            if not Path(name).expanduser().is_dir():
                raise XlingError(f"no such directory: {name}")
            return Path(name).expanduser().resolve()
        if (directory := self.find(role, name, roots)) is None:
            raise XlingError(
                f"no {role.title}{' for' if role is LANG else ''} {name!r} in {self.adapter_dir(role, name).parent}"
                f"{self._elsewhere(role)}; if another workspace holds it, give that with -w FOLDER; else train it "
                f"with: {role.how.format(name=name)}"
            )
        return directory

    def task_adapter_name(
        self, task: str, lang: str, adapter: str | None = None, planned: set[str] = frozenset()
    ) -> str:
        """The task adapter that tagging `lang` uses: `adapter` if given, else `<task>-<lang>` if the workspace
        has one or `planned` will (trained few-shot on the language), else `<task>-en` (zero-shot transfer from
        English); with neither in the workspace, the same choice among the shipped ones. Never another adapter
        because it happens to be there: a stray experiment does not become the default."""
        if adapter:
            return adapter
        wanted = (f"{task}-{lang}", f"{task}-en")
        for root in self.roots:
            own = set(planned) if root == self.model_dir else set()
            if found := [name for name in wanted if name in own or (root / TASK.name / name).is_dir()]:
                return found[0]
        raise XlingError(
            f"no {' or '.join(dict.fromkeys(wanted))} task adapter in {self.model_dir / TASK.name}{self._elsewhere(TASK)}; "
            f"train one with: xling train-task {task} --lang en --train FILE --dev FILE, or name one with -t"
        )

    def why_chosen(self, task: str, lang: str, name: str) -> str | None:
        """Why `task_adapter_name` chose `name` for `lang` where none was named, for the notice line; None where
        it is the workspace's own `<task>-<lang>`, which needs no word."""
        wanted = f"{task}-{lang}"
        if name == wanted and (self.model_dir / TASK.name / name).is_dir():
            return None
        shipped = self.find(TASK, wanted, self.roots[1:]) is not None
        return f"your workspace has no {wanted}" + ("" if shipped or name == wanted else " and xling ships none")

    def lang_adapter(self, lang: str, under: Path | None = None) -> Path:
        """The language adapter `lang`; `under` a shipped task adapter, the shipped one it was trained over."""
        return self._trained(LANG, lang, self.roots[::-1] if under is not None and is_pretrained(under) else None)

    def task(self, name: str) -> Path:
        return self._trained(TASK, name)

    def fusion(self, name: str) -> Path:
        return self._trained(FUSION, name)

    def adapter(self, name: str) -> Path:
        """Any trained adapter, fusion or task by name (whichever kind has it), directory or Hub name."""
        if is_hub_name(name) or is_path(name):
            return self._trained(TASK, name)
        for root in self.roots:  # the first root holding the name, whatever its role
            if found := [directory for role in ROLES if (directory := self.find(role, name, [root]))]:
                break
        if not found:
            raise XlingError(f"no adapter {name!r} in {self.model_dir} (looked in {', '.join(map(str, ROLES))})")
        if len(found) > 1:
            raise XlingError(
                f"{name!r} names several adapters in {self.model_dir}: {', '.join(map(str, found))}; give the directory"
            )
        return found[0]
