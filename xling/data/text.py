"""Unlabelled text for language adapters and the encoder: files, folders and globs, cleaned; parallel text.

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
from xling.data.hub_datasets import TOKEN_COLUMNS
from xling.errors import XlingError
from xling.given_data import DatasetLike, in_memory


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


def read_text(sources) -> tuple[list[str], list[Path]]:
    """Clean, deduplicated lines of all sources, and the files they came from. From Python the text may be in
    memory: a `datasets.Dataset` with a `text` column (or a tokens column), or a list of tokenised sentences."""
    if in_memory(sources):
        return clean(memory_lines(sources)), []
    files = expand_sources(sources)
    return clean(line for path in files for line in file_lines(path)), files


def clean(lines: Iterable[str]) -> list[str]:
    """NFC, stripped, without empty or repeated lines."""
    found = dict.fromkeys(unicodedata.normalize("NFC", line).strip() for line in lines)
    return [line for line in found if line]


def memory_lines(source) -> Iterator[str]:
    if isinstance(source, DatasetLike):
        columns = [c for c in ("text", "sentence", *TOKEN_COLUMNS) if c in source.column_names]
        if not columns:
            raise XlingError(f"the dataset has no text or tokens column; its columns: {', '.join(source.column_names)}")
        for value in source[columns[0]]:
            yield from pieces([value if isinstance(value, str) else " ".join(value)])
        return
    for number, sentence in enumerate(source, start=1):
        if not (isinstance(sentence, list | tuple) and all(isinstance(word, str) for word in sentence)):
            raise XlingError(f"sentence {number}: give the text as a list of words (or a file, folder or corpus name)")
        yield from pieces([" ".join(sentence)])


def parallel_files(sources: list[str], source_lang: str, lang: str) -> list[tuple[Path, Path]]:
    """(source file, target file) pairs: NAME.SOURCE_LANG beside NAME.LANG, in the folders or files given."""
    pairs = []
    for file in expand_sources(sources):
        if file.suffix == f".{source_lang}":
            partner = file.with_suffix(f".{lang}")
            if not partner.is_file():
                raise XlingError(f"{file} has no translation beside it: {partner.name} is missing")
            pairs.append((file, partner))
    if not pairs:
        raise XlingError(f"no parallel files in {', '.join(sources)}: expected NAME.{source_lang} beside NAME.{lang}")
    return pairs


def read_parallel(source: Path, target: Path) -> list[tuple[str, str]]:
    """The files' lines side by side; both files must have the same number of lines."""
    left = [line for _, line in read_lines(source)]
    right = [line for _, line in read_lines(target)]
    if len(left) != len(right):
        raise XlingError(f"{source} has {len(left)} lines but {target} has {len(right)}: they are not line-aligned")
    return list(zip(left, right))
