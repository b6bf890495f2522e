"""Unlabelled text for language adapters: files, folders and globs, cleaned.

Lines are read as UTF-8 (an error names file and line otherwise), NFC-normalised,
stripped; empty and duplicate lines are dropped. CoNLL-style NER files count as text:
their first column, joined into sentences, labels ignored.
"""

from __future__ import annotations

import glob
import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

from xling.data.conll import looks_like_conll, read_conll, read_lines
from xling.data.fetch import resolve
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


# A longer line (a whole book without line breaks, say) is cut at spaces into pieces of at most this many
# characters, so that what tokenising and tagging hold stays bounded whatever one line's length.
MAX_LINE_CHARS = 10_000
SPACE = re.compile(r"\s")


def line_pieces(line: str, limit: int = MAX_LINE_CHARS) -> Iterator[str]:
    """`line` in pieces of at most `limit` characters, each cut after a space where there is one; joined
    again they are the line."""
    start = 0
    while len(line) - start > limit:
        window = line[start : start + limit]
        cut = max((m.end() for m in SPACE.finditer(window, limit // 2)), default=limit)
        yield line[start : start + cut]
        start += cut
    yield line[start:]


def pieces(lines: Iterable[str]) -> Iterator[str]:
    """Each line, long ones in pieces (`line_pieces`)."""
    for line in lines:
        yield from line_pieces(line)


def file_lines(path: Path) -> list[str]:
    if looks_like_conll(path):
        return [" ".join(s.tokens) for s in read_conll(path)]
    return list(pieces(line for _, line in read_lines(path)))


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
