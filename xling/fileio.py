"""Atomic writes: build in a temporary sibling, then rename, so nothing is ever half-written."""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from xling.errors import XlingError

MAX_NAME_BYTES = 255  # of one path component, as file systems allow
MAX_FILE_NAME = 200  # bytes of a file name xling writes: it adds suffixes to some


@contextmanager
def atomic_directory(target: Path, overwrite: bool = False, replaces: tuple[str, ...] = ()):
    """Yield a temporary directory that replaces `target` only if the block succeeds.

    With `replaces`, an existing target is replaced only if it holds one of those files (is
    what this save makes): `--overwrite` never deletes a folder xling did not write.
    """
    target = Path(target)
    if target.exists() and not target.is_dir():
        raise XlingError(f"{target} is a file, not a folder; give a folder to write")
    check_output_name(target)
    if target.exists() and not overwrite:
        raise XlingError(f"{target} already exists (use --overwrite to replace it)")
    if target.exists() and replaces and not any((target / marker).is_file() for marker in replaces):
        raise XlingError(f"{target} exists and is not one of xling's (no {' or '.join(replaces)}); not replacing it")
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".{target.name}.partial-*"):  # left by a save killed half-way
        shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        yield staging
        staging.chmod(0o755)
        for file in staging.rglob("*"):
            file.chmod(0o755 if file.is_dir() else 0o644)
        if target.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.rename(target, retired / "old")
            os.rename(staging, target)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.rename(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def atomic_text_file(path: Path):
    """Yield a text file handle whose content replaces `path` only if the block succeeds. A path that exists and
    is not a regular file (a device, a FIFO, /dev/stdout) is written to as it is, never replaced by a file."""
    path = check_output_file(path)
    if path.exists() and not path.is_file():
        with _written(path):
            with open(path, "w", encoding="utf-8") as f:
                yield f
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.*.tmp"):  # left by a writer killed half-way
        if not _alive(stale.name.rsplit(".", 3)[-3]):
            stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yield f
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


@contextmanager
def _written(path: Path):
    """A failed write or flush to a special file is one line (`/dev/full`: no space), never success."""
    try:
        yield
    except OSError as err:
        raise XlingError(f"cannot write {path}: {err.strerror or err}") from None


def _alive(pid: str) -> bool:
    """Whether process `pid` (as written in a temporary file's name) still runs."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # another user's process
        return True
    return True


def write_text_atomic(path: Path, text: str) -> None:
    """The file holds either its old content or all of `text`, never a part."""
    with atomic_text_file(path) as f:
        f.write(text)


def check_output_file(path: Path) -> Path:
    """A path a file can be written to (checked before long work): not a folder, and not below a file."""
    path = check_output_name(path)
    if path.is_dir():
        raise XlingError(f"{path} is a folder; give a file path to write")
    return path


def too_long_name(path: Path) -> str | None:
    """The first name in `path` over MAX_NAME_BYTES, which no file system takes, or None."""
    return next((part for part in Path(path).parts if len(part.encode()) > MAX_NAME_BYTES), None)


def check_output_name(path: Path) -> Path:
    """A path whose every name is within bounds and whose existing ancestors are all folders."""
    path = Path(path)
    if len(path.name.encode()) > MAX_FILE_NAME:  # xling writes beside it: NAME.parts/, .NAME.tmp
        raise XlingError(f"the file name {path.name[:40]}... is too long: at most {MAX_FILE_NAME} bytes")
    if long := too_long_name(path.parent):
        raise XlingError(f"the folder name {long[:40]}... is too long: at most {MAX_NAME_BYTES} bytes")
    for ancestor in path.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise XlingError(f"cannot write {path}: {ancestor} is a file, not a folder")
            break
    return path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_json(path: Path):
    """A JSON file's content, or one line saying what is wrong with it."""
    path = Path(path)
    if not path.is_file():
        raise XlingError(f"{path} is missing")
    try:
        return parse_json(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as err:  # ValueError: also an integer of 4,300+ digits
        raise XlingError(f"{path} is not valid JSON: {(str(err) or 'nested too deeply').splitlines()[0]}") from None


def parse_json(text: str | bytes):
    """JSON as xling reads it: NaN and Infinity are refused (ValueError), like an integer too long to parse and a
    string holding a lone UTF-16 surrogate (`"\\ud800"`: no character, which no file or page can take)."""
    value = json.loads(text, parse_constant=_no_constant)
    check_no_surrogates(value)
    return value


SURROGATE = re.compile("[\ud800-\udfff]")


def check_no_surrogates(value) -> None:
    """Every string of a JSON value (keys too) is text: ValueError naming the first lone surrogate."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str) and (found := SURROGATE.search(item)):
            raise ValueError(f"a string holds a lone UTF-16 surrogate (\\u{ord(found[0]):04x}), which is no character")


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def read_jsonl(path: Path, damaged: list[str] | None = None, record: Callable | None = None) -> list:
    """The records of a JSON-lines file's complete lines: a last line without its newline (a write cut short by
    a kill, or one under way in another process) is left out, never cut off: only the file's writer does that.
    `record(value, where)` makes each line's value a record (an XlingError: the line is damaged). A damaged line
    stops the reading in one line naming the file and line, or, given a `damaged` list, is skipped and named
    there."""
    if not path.is_file():
        return []
    data = path.read_bytes()
    records = []
    for number, line in enumerate(data[: data.rfind(b"\n") + 1].splitlines(), start=1):
        try:
            value = parse_json(line.decode("utf-8"))
            records.append(record(value, f"{path}:{number}") if record else value)
        except XlingError as err:
            if damaged is None:
                raise
            damaged.append(str(err))
        except (ValueError, UnicodeDecodeError, RecursionError):
            said = f"{path}:{number}: a damaged line"
            if damaged is None:
                raise XlingError(f"{said}; move the file aside to start over") from None
            damaged.append(said)
    return records


def append_jsonl(path: Path, record: dict) -> None:
    """One line added and synced to disk before this returns. The file's one writer calls it: a line an earlier
    writer left cut short by a kill is cut off first, so that the new line stands on its own."""
    # O_NOFOLLOW: a log that is a symbolic link is never appended to (the write would land where it points)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
    with os.fdopen(descriptor, "a+b") as f:
        end = f.seek(0, os.SEEK_END)
        if end and f.seek(end - 1) is not None and f.read(1) != b"\n":
            f.seek(0)
            data = f.read()
            f.truncate(data.rfind(b"\n") + 1)
        f.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def json_text(data, **settings) -> str:
    """JSON that every reader takes (xling's own refuses NaN): a number that is not finite (an F1 of no entities)
    is written as null."""
    return json.dumps(finite(data), allow_nan=False, **settings)


def finite(value):
    """`value` with each float that is not finite replaced by None, at any depth."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def write_json_atomic(path: Path, data) -> None:
    write_text_atomic(path, json_text(data, indent=2, ensure_ascii=False) + "\n")


class EntryLock:
    """An exclusive lock on one workspace entry (`<entry>.lock`, held with `fcntl.flock`) while a run trains or
    saves it: a second run on the same name is refused, naming the process that holds it. The operating system
    lets go of it when the holder ends, even by `kill -9`; a holder that ends normally removes the file."""

    def __init__(self, entry: Path, what: str, busy: str | None = None):
        """busy: the refusal, with `{holder}` where the holder's line goes (default: a training run's)."""
        self.file = Path(f"{entry}.lock")
        self.file.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.file, "a+")
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # a holder may have removed the file between our open and our lock: then the lock is on nothing
            if os.fstat(self.handle.fileno()).st_ino != os.stat(self.file).st_ino:
                raise BlockingIOError
        except (BlockingIOError, FileNotFoundError):
            self.handle.seek(0)
            holder = self.handle.read().strip() or "?"
            self.handle.close()
            busy = busy or (
                f"another xling run (pid {{holder}}) is training or saving the {what} {entry.name!r}; "
                "wait for it to end, or stop it"
            )
            raise XlingError(busy.replace("{holder}", holder)) from None
        self.note(str(os.getpid()))

    @staticmethod
    def holder(entry: Path) -> str | None:
        """The pid that holds `entry`'s lock, while that process runs (a `kill -9` leaves the file behind)."""
        try:
            pid = Path(f"{entry}.lock").read_text().split(maxsplit=1)
        except FileNotFoundError:
            return None
        return pid[0] if pid and _alive(pid[0]) else None

    def note(self, holder: str) -> None:
        """What a refused second run is told of the holder (its pid, an address)."""
        self.handle.truncate(0)
        self.handle.write(f"{holder}\n")
        self.handle.flush()

    def release(self) -> None:
        if not self.handle.closed:
            self.file.unlink(missing_ok=True)  # while still held: no other run holds this file
            self.handle.close()
