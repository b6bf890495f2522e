"""Atomic writes: build in a temporary sibling, then rename, so nothing is ever half-written."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from xling.errors import XlingError


@contextmanager
def atomic_directory(target: Path, overwrite: bool = False):
    """Yield a temporary directory that replaces `target` only if the block succeeds."""
    target = Path(target)
    if target.exists() and not overwrite:
        raise XlingError(f"{target} already exists (use --overwrite to replace it)")
    target.parent.mkdir(parents=True, exist_ok=True)
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


def write_text_atomic(path: Path, text: str) -> None:
    """The file holds either its old content or all of `text`, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def write_json_atomic(path: Path, data) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
