"""Word tokenisation for raw text, with character offsets.

Suited to Quechua and Spanish: apostrophes inside words stay there, so the ejective
and glottal-stop letters p', t', k', q', ch' (p'unchaw, k'anchan, ch'aki) are single
words; numbers keep their decimal separators; every other punctuation mark is a token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

APOSTROPHES = "'’ʼ`"
WORD = re.compile(rf"\d+(?:[.,]\d+)*|\w+(?:[{APOSTROPHES}]\w+)*|[^\w\s]", re.UNICODE)
SENTENCE_END = re.compile(r"(?<=[.!?…])[\"”»)]*\s+(?=[\"“«(¿¡]?[A-ZÁÉÍÓÚÑ0-9])")


@dataclass
class Token:
    text: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    return [Token(m.group(), m.start(), m.end()) for m in WORD.finditer(text)]


def joined(tokens: list[str]) -> tuple[str, list[Token]]:
    """Pre-tokenised words as one text, joined by single spaces, with each word's offsets in it."""
    words, cursor = [], 0
    for token in tokens:
        words.append(Token(token, cursor, cursor + len(token)))
        cursor += len(token) + 1
    return " ".join(tokens), words


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of running text: after . ! ? and a capital or digit."""
    spans, start = [], 0
    for boundary in SENTENCE_END.finditer(text):
        if text[start : boundary.start()].strip():
            spans.append((start, boundary.start()))
        start = boundary.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans
