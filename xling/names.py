"""The rules for names and paths that files and options give: language codes, adapter names written as a
path or a Hub name, and relative paths that must stay inside the folder they are read from."""

from __future__ import annotations

import re
from pathlib import Path

from xling.errors import XlingError
from xling.fileio import MAX_FILE_NAME

LANG_CODE = re.compile(r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$")


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
