"""CoNLL-style NER files: token first, tag last, blank lines between sentences.

Handles whitespace- or tab-separated columns, `-DOCSTART-` lines, the `lang:` token
prefix of WikiANN releases (stripped), and every tagging scheme `xling.data.schemes` reads (IOB1, IOE, BIOES,
BILUO, IO), detected over the whole file or given, converted to IOB2.

Partial labels: the tag `?` marks a word nobody judged (an annotator answered for another span of
its sentence). Training leaves such words out of the loss instead of teaching them as `O`;
scoring refuses them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from xling.data.schemes import data_in_iob2, misfit, parts
from xling.errors import XlingError

TAG = re.compile(r"^(O|\?|[BIESLU]-\S+)$")  # what makes a file look like CoNLL (a bare IO type looks like a word)
WIKIANN_PREFIX = re.compile(r"^[a-z]{2,3}(-[a-z]+)?:(?=.)")


@dataclass
class Sentence:
    tokens: list[str]
    tags: list[str]


MAX_LINE_BYTES = 1 << 16  # a longer line is read in pieces, so that memory stays bounded whatever the file


def read_lines(path: Path):
    """Yield (line number, text) of a UTF-8 file, failing with the file and line of bad bytes. A line longer than
    MAX_LINE_BYTES comes in pieces under its number, each cut after a space (or, with none, between characters):
    a book on one line is never held whole."""
    try:
        with open(path, "rb") as f:
            number, carry = 1, b""
            while chunk := f.readline(MAX_LINE_BYTES):
                raw, carry = carry + chunk, b""
                if not chunk.endswith(b"\n") and len(chunk) == MAX_LINE_BYTES:  # a piece of a longer line
                    cut = raw.rfind(b" ") + 1 or _character_end(raw)
                    raw, carry = raw[:cut], raw[cut:]
                    yield number, _decoded(raw, path, number)
                    continue
                yield number, _decoded(raw, path, number).rstrip("\r\n")
                number += 1
            if carry:
                yield number, _decoded(carry, path, number)
    except OSError as err:
        raise XlingError(f"cannot read {path}: {err.strerror}") from None


# characters of one line tagged as one record (its result holds all of it): a book on one line is refused, not
# held until memory runs out
MAX_RECORD_CHARS = 10_000_000


def whole_lines(numbered: Iterable[tuple[int, str]], source: str = "the input") -> Iterator[tuple[int, str]]:
    """`read_lines`' numbered lines with a long line's pieces joined again: for tagging, where a line's result is
    one record (and so held whole anyway), not for training text. A line over MAX_RECORD_CHARS is refused."""
    number, parts, size = None, [], 0
    for line_number, text in numbered:
        if line_number != number and parts:
            yield number, "".join(parts)
            parts, size = [], 0
        number, size = line_number, size + len(text)
        if size > MAX_RECORD_CHARS:
            raise XlingError(too_long(source, line_number))
        parts.append(text)
    if parts:
        yield number, "".join(parts)


def too_long(source: str, number: int) -> str:
    return (
        f"{source}, line {number}: over {MAX_RECORD_CHARS:,} characters, and each line is tagged as one result; "
        "break the text into lines (a sentence or a paragraph each)"
    )


def _character_end(data: bytes) -> int:
    """An end between two UTF-8 characters within the last four bytes of `data` (the last character may be
    left for the next piece)."""
    end = len(data)
    while end > max(0, len(data) - 4) and 0x80 <= data[end - 1] < 0xC0:  # continuation bytes
        end -= 1
    if end < len(data) and end > 0:  # `data[end - 1]` leads a character cut short
        end -= 1
    return end or len(data)


def _decoded(raw: bytes, path: Path, number: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise XlingError(f"{path}:{number}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    return text.removeprefix("\ufeff") if number == 1 else text  # a byte-order mark is no text


def looks_like_conll(path: Path, sample: int = 200) -> bool:
    """Most non-empty lines have at least two columns and end in a NER tag."""
    seen = tagged = 0
    for _, line in read_lines(path):
        if not line.strip() or line.startswith("-DOCSTART-"):
            continue
        columns = line.split()
        seen += 1
        tagged += len(columns) >= 2 and bool(TAG.match(columns[-1]))
        if seen >= sample:
            break
    return seen > 0 and tagged >= 0.9 * seen


def read_conll(path: Path, scheme: str = "auto") -> list[Sentence]:
    """The sentences of a CoNLL file, in IOB2: read as `scheme`, or as the scheme its tags are in (auto)."""
    path = Path(path)
    read: list[tuple[list[str], list[str], list[int]]] = [([], [], [])]  # tokens, tags and line numbers
    for number, line in read_lines(path):
        if not line.strip() or line.startswith("-DOCSTART-"):
            if read[-1][0]:
                read.append(([], [], []))
            continue
        columns = columns_of(line)
        if len(columns) < 2 or not columns[0]:
            raise XlingError(f"{path}:{number}: expected a token and a tag, got {line!r}")
        tag = columns[-1]
        if (found := parts(tag)) and found[0] == "?":
            raise XlingError(f"{path}:{number}: {misfit(tag, 'auto')}")
        tokens, tags, numbers = read[-1]
        tokens.append(WIKIANN_PREFIX.sub("", columns[0], count=1))
        tags.append(tag)
        numbers.append(number)
    read = [sentence for sentence in read if sentence[0]]
    tags = data_in_iob2([tags for _, tags, _ in read], scheme, lambda s, t: f"{path}:{read[s][2][t]}")
    return [Sentence(tokens, converted) for (tokens, _, _), converted in zip(read, tags)]


def conll_text(sentences: list[Sentence]) -> str:
    """Sentences as CoNLL: a token and its tag per line, a blank line after each sentence."""
    return "".join("".join(f"{t}\t{g}\n" for t, g in zip(s.tokens, s.tags)) + "\n" for s in sentences)


def columns_of(line: str) -> list[str]:
    """A CoNLL line's columns: tab-separated where the line has tabs (a token may then hold spaces, as QuBERT's
    place names do: `Killki phaqcha<TAB>B-LOC`), else whitespace-separated; trailing tabs or spaces are no empty
    column."""
    line = line.rstrip()
    return [c.strip() for c in line.split("\t")] if "\t" in line else line.split()


@dataclass
class TokenRows:
    """One pre-tokenised sentence as its file gives it: each token's line as columns, the token first."""

    rows: list[list[str]]

    @property
    def tokens(self) -> list[str]:
        return [WIKIANN_PREFIX.sub("", row[0], count=1) for row in self.rows]


def read_rows(lines) -> Iterator[TokenRows]:
    """Pre-tokenised input, sentence by sentence as it is read, every column kept (POS, chunk, a gold tag: what
    other tools wrote); blank lines between sentences, `-DOCSTART-` document markers skipped as `read_conll` skips
    them."""
    rows: list[list[str]] = []
    for _, line in lines:
        if line.strip() and not line.startswith("-DOCSTART-"):
            rows.append(columns_of(line))
        elif rows:
            yield TokenRows(rows)
            rows = []
    if rows:
        yield TokenRows(rows)


def read_tokens(lines) -> Iterator[list[str]]:
    """The tokens of `read_rows`' sentences: the first column of each line, as `read_conll` reads it."""
    return (sentence.tokens for sentence in read_rows(lines))
