"""The layouts `xling export --format NAME` writes and `xling push --format NAME` uploads, one module each
(registered in `xling.exporting.LAYOUTS`). Each module has

    export(options: ExportOptions, workspace: Workspace) -> str    # write options.target; how it loads
    push_folder(options: PushOptions, staging: Path) -> tuple[Path, dict[str, str]]    # what to upload, files over it

(`xling`, the adapter folder as xling saves it, is pushed only). A new layout is its module and one entry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from xling.exporting import ExportOptions, PushOptions, saved_adapter
from xling.workspace import Workspace

# An adapter layout's writer: (adapter folder, target, repository it is pushed to or None, overwrite) -> None
Writer = Callable[..., None]


def adapter_layout(write: Writer, loads: str) -> tuple[Callable, Callable]:
    """The `export` and `push_folder` of a layout that writes one adapter with `write`; `loads` says how an export
    loads, `{target}` its folder."""

    def export(options: ExportOptions, workspace: Workspace) -> str:
        target = Path(options.target)
        write(workspace.adapter(options.adapter), target, None, options.overwrite)
        return loads.format(target=repr(str(target)))

    def push_folder(options: PushOptions, staging: Path) -> tuple[Path, dict[str, str]]:
        directory = saved_adapter(options)  # written with its card naming the repository
        write(directory, staging / directory.name, options.repo_id, False)
        return staging / directory.name, {}

    return export, push_folder
