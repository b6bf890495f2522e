"""Unlabelled text for language adapters: files, folders and globs, cleaned.

Lines are read as UTF-8 (an error names file and line otherwise), NFC-normalised,
stripped; empty and duplicate lines are dropped. CoNLL-style NER files count as text:
their first column, joined into sentences, labels ignored.
"""

from __future__ import annotations

import glob
import unicodedata
from pathlib import Path

from xling.data.catalog import resolve
from xling.data.conll import looks_like_conll, read_conll, read_lines
from xling.errors import XlingError


def expand_sources(sources: list[str]) -> list[Path]:
    """Files, folders (every file below, sorted), globs and catalogue names (`corpus:quechua-text`), in the
    order given."""
    files: list[Path] = []
    for source in sources:
        path = Path(resolve(source)).expanduser()
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")))
        elif any(ch in source for ch in "*?["):
            matches = sorted(Path(p) for p in glob.glob(source, recursive=True) if Path(p).is_file())
            if not matches:
                raise XlingError(f"no files match {source}")
            files.extend(matches)
        else:
            raise XlingError(f"no such file or folder: {source}")
    if not files:
        raise XlingError(f"no files found in {', '.join(sources)}")
    return files


def file_lines(path: Path) -> list[str]:
    if looks_like_conll(path):
        return [" ".join(s.tokens) for s in read_conll(path)]
    return [line for _, line in read_lines(path)]


def read_text(sources: list[str]) -> tuple[list[str], list[Path]]:
    """Clean, deduplicated lines of all sources, and the files they came from."""
    files = expand_sources(sources)
    seen: set[str] = set()
    lines: list[str] = []
    for path in files:
        for line in file_lines(path):
            line = unicodedata.normalize("NFC", line).strip()
            if line and line not in seen:
                seen.add(line)
                lines.append(line)
    return lines, files
