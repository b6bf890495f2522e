"""What every tagger does with its model's word probabilities, whatever runs the model (PyTorch: `Tagger`;
ONNX Runtime: `OnnxTagger`): decode them into tags, tag raw texts, lines, tokens and streams, and make spans.

A runtime supplies `labels`, `decoder`, `batch_size` and `word_probabilities(sentences)`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import count

import numpy as np

from xling.data.conll import TokenRows, read_rows
from xling.data.decoding import decode
from xling.data.iob2 import entities
from xling.data.text import line_pieces
from xling.errors import XlingError
from xling.fileio import parse_json
from xling.tagging.reading import ready_chunks
from xling.tagging.words import Token, joined, split_sentences, tokenize


@dataclass
class Span:
    start: int
    end: int
    text: str
    label: str
    score: float

    def to_dict(self) -> dict:
        """The one shape of an entity in xling's JSONL and `xling serve`: that of Transformers'
        `pipeline("token-classification", aggregation_strategy=...)` entities."""
        return {
            "entity_group": self.label,
            "score": self.score,
            "word": self.text,
            "start": self.start,
            "end": self.end,
        }


@dataclass
class TaggedText:
    """One input text: its words with tags and probabilities, and the entity spans; `about`, what the input said of
    it (its line or sentence number, or a JSON record's id and other keys), which JSONL output carries; `columns`,
    each token's columns as CoNLL input gave them, which CoNLL output writes before the predicted tag."""

    text: str
    tokens: list[Token]
    tags: list[str]
    scores: list[float]
    spans: list[Span]
    about: dict = field(default_factory=dict)
    columns: list[list[str]] = field(default_factory=list)


def merged(parts: list[TaggedText], about: dict) -> TaggedText:
    """The results of one text's pieces as one result, with offsets into the whole text."""
    if len(parts) == 1:
        return replace(parts[0], about=about)
    whole = TaggedText("", [], [], [], [], about)
    for part in parts:
        offset = len(whole.text)
        whole.text += part.text
        whole.tokens += [Token(t.text, t.start + offset, t.end + offset) for t in part.tokens]
        whole.tags += part.tags
        whole.scores += part.scores
        whole.spans += [replace(s, start=s.start + offset, end=s.end + offset) for s in part.spans]
    return whole


def line_records(lines: Iterable[tuple[int, str]], jsonl: bool, source: str) -> Iterator[tuple[dict, str]]:
    """(what is said of it, text) of each numbered line: its number, or with `jsonl` the line's JSON record, its
    `text` tagged and its `id` (else its line number) and other keys kept."""
    for number, line in lines:
        if not jsonl:
            yield {"line": number}, line
            continue
        if not line.strip():
            continue
        try:
            record = parse_json(line)
        except (ValueError, RecursionError):
            raise XlingError(f"{source}:{number}: not a JSON record") from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise XlingError(f'{source}:{number}: a JSON record needs "text", a string (and may have "id")')
        kept = {key: value for key, value in record.items() if key not in ("text", "entities")}
        yield ({} if "id" in record else {"line": number}) | kept, record["text"]


# Decimal places of every score xling writes or serves (an entity's, a word's): one rounding, whatever the output.
SCORE_DIGITS = 4


def shown_score(probability: float) -> float:
    return round(float(probability), SCORE_DIGITS)


def spans_from_tags(text: str, tokens: list[Token], tags: list[str], scores: list[float]) -> list[Span]:
    """Entities from IOB2 tags; an entity's score is the mean probability of its words."""
    spans: list[Span] = []
    for kind, first, end in entities(tags):
        start, stop = tokens[first].start, tokens[end - 1].end
        spans.append(Span(start, stop, text[start:stop], kind, shown_score(sum(scores[first:end]) / (end - first))))
    return spans


def check_batch_size(batch_size: int) -> None:
    if batch_size < 1:
        raise XlingError(f"batch-size must be at least 1, not {batch_size}")


class TextTagger(ABC):
    """The tagging a runtime gets by supplying word probabilities."""

    labels: list[str]
    decoder: str
    batch_size: int
    runtime: str  # what runs the model: torch or onnx

    @abstractmethod
    def word_probabilities(self, sentences: list[list[str]]) -> list[np.ndarray]:
        """Per pre-tokenised sentence, a (words, labels) array of tag probabilities."""

    def tag_words(self, sentences: list[list[str]]) -> list[list[tuple[str, float]]]:
        """Pre-tokenised sentences -> per word (tag, probability)."""
        return [
            decode(p, self.labels, self.decoder, words)
            for p, words in zip(self.word_probabilities(sentences), sentences)
        ]

    def tag_lines(
        self, lines: Iterable[str], paragraphs: bool = False, conll: bool = False, jsonl: bool = False
    ) -> Iterator[TaggedText]:
        """Lines of a file, streamed: one sentence each, running text (`paragraphs`), JSON records (`jsonl`) or
        pre-tokenised CoNLL (`conll`: one result per sentence). Each result says its line (`about`)."""
        yield from self.tag_numbered(enumerate(lines, start=1), paragraphs, conll, jsonl)

    def tag_numbered(
        self,
        lines: Iterable[tuple[int, str]],
        paragraphs: bool = False,
        conll: bool = False,
        jsonl: bool = False,
        source: str = "<input>",
        streaming: bool = True,
    ) -> Iterator[TaggedText]:
        """`tag_lines` of numbered lines; a text longer than `MAX_LINE_CHARS` is tagged in pieces cut at spaces and
        comes back whole. Without `streaming`, the lines are tagged as one read (a block of a file)."""
        if conll:
            sentences = read_rows(lines)
            chunks = self._reads(sentences) if streaming else [list(sentences)]
            numbers = count(1)
            for chunk in chunks:
                yield from self.tag_rows(chunk, numbers)
            return
        order: deque[tuple[dict, int]] = deque()  # each piece's record and how many pieces its text has

        def texts() -> Iterator[str]:
            for about, text in line_records(lines, jsonl, source):
                parts = list(line_pieces(text))
                for part in parts:
                    order.append((about, len(parts)))
                    yield part

        results = self.pipe(texts(), paragraphs=paragraphs) if streaming else self.tag_texts(list(texts()), paragraphs)
        parts: list[TaggedText] = []
        for result in results:
            about, pieces = order.popleft()
            parts.append(result)
            if len(parts) == pieces:
                yield merged(parts, about)
                parts = []

    def tag_tokens(self, sentences: list[list[str]]) -> list[TaggedText]:
        """Pre-tokenised sentences -> tagged texts, each the tokens joined by single spaces."""
        results = []
        for tokens, tagged in zip(sentences, self.tag_words(sentences)):
            text, words = joined(tokens)
            tags, scores = [t for t, _ in tagged], [p for _, p in tagged]
            results.append(TaggedText(text, words, tags, scores, spans_from_tags(text, words, tags, scores)))
        return results

    def tag_rows(self, sentences: list[TokenRows], numbers: Iterator[int]) -> list[TaggedText]:
        """CoNLL input's sentences -> tagged texts that keep their columns, each numbered by `numbers`."""
        tagged = self.tag_tokens([sentence.tokens for sentence in sentences])
        return [
            replace(t, about={"sentence": next(numbers)}, columns=s.rows)
            for s, t in zip(sentences, tagged, strict=True)
        ]

    def tag_texts(self, texts: list[str], paragraphs: bool = False) -> list[TaggedText]:
        """Raw texts -> tagged texts. With `paragraphs`, each text is split into sentences first."""
        pieces: list[tuple[int, int, int]] = []  # (text index, start, end)
        for index, text in enumerate(texts):
            spans = split_sentences(text) if paragraphs else [(0, len(text))]
            pieces.extend((index, start, end) for start, end in spans)
        token_lists = [
            [Token(t.text, t.start + start, t.end + start) for t in tokenize(texts[i][start:end])]
            for i, start, end in pieces
        ]
        predicted = self.tag_words([[t.text for t in tokens] for tokens in token_lists])
        results = [TaggedText(text, [], [], [], []) for text in texts]
        for (index, _, _), tokens, tagged in zip(pieces, token_lists, predicted):
            result = results[index]
            result.tokens += tokens
            result.tags += [tag for tag, _ in tagged]
            result.scores += [score for _, score in tagged]
        for result in results:
            result.spans = spans_from_tags(result.text, result.tokens, result.tags, result.scores)
        return results

    def __call__(self, text: str | list[str]) -> list[Span] | list[list[Span]]:
        """A text's entity spans; for a list of texts, a list of span lists (batched together)."""
        if isinstance(text, str):
            return self.tag_texts([text])[0].spans
        return [tagged.spans for tagged in self.tag_texts(list(text))]

    def pipe(
        self, texts: Iterable[str], batch_size: int | None = None, paragraphs: bool = False
    ) -> Iterator[TaggedText]:
        """Stream tagged texts, reading up to `batch_size` texts at a time (default: one model batch first,
        then twice as many each time up to 16 model batches), never waiting for texts that have not come.

        Each read is sorted by length into model batches of `self.batch_size`; reading many model batches at
        once keeps the padding small, which is what makes larger model batches pay, and a small first read
        gives the first results quickly."""
        if batch_size is not None:
            check_batch_size(batch_size)
        for chunk in self._reads(texts, batch_size):
            yield from self.tag_texts(chunk, paragraphs)

    def _reads(self, items: Iterable, size: int | None = None) -> Iterator[list]:
        """`items` in lists of up to `size`, or growing from one model batch to 16; a list never waits for
        input that has not come yet (`ready_chunks`), so a slow pipe's lines are tagged as they arrive."""
        largest = size or 16 * self.batch_size
        sizes = (size or min(self.batch_size * 2**n, largest) for n in count())
        return ready_chunks(items, sizes, ahead=largest)
