"""Words to sub-word windows and back.

The first sub-token of each word carries the word's label. Sentences longer than the
model's limit are cut into overlapping windows, never silently truncated; at prediction
time each word takes its tag from the window where it sits furthest from an edge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from xling.data.labels import IGNORE

STRIDE = 32  # sub-tokens two windows of a long sentence share: context for the words near a cut


@dataclass
class Window:
    sentence: int  # index of the sentence it comes from
    input_ids: list[int]
    word_index: list[int]  # per sub-token: the word it starts, or -1 (special, continuation)


def joins_split_words(tokenizer) -> bool:
    """Whether `tokenizer` glues pre-split words together: one with no pre-tokenizer to mark where a word starts
    (Gemma's, so mmBERT's; a SentencePiece model without `▁` before every word) reads `["a", "b"]` as "ab", not as
    the running text "a b" it learnt from, whose second word's pieces carry the space."""
    encoded = tokenizer([["a b"], ["a", "b"]], is_split_into_words=True, add_special_tokens=False, verbose=False)
    together, apart = encoded["input_ids"]
    return together != apart


def split_words(sentences: list[list[str]], tokenizer) -> list[list[str]]:
    """Sentences as `tokenizer` must take them pre-split to see the pieces of running text: each word after the
    first with its space where the tokenizer would glue them (`joins_split_words`), one word still one word."""
    if not joins_split_words(tokenizer):
        return sentences
    return [[word if i == 0 else " " + word for i, word in enumerate(words)] for words in sentences]


def windows_for(sentences: list[list[str]], tokenizer, max_len: int, stride: int) -> list[Window]:
    """Tokenise pre-split sentences (one tokenizer call per batch of sentences) and window them."""
    body = max_len - 2  # room for the specials
    if body < 4:
        raise ValueError("max_len too small")
    windows: list[Window] = []
    step = 2048
    for start in range(0, len(sentences), step):
        chunk = split_words(sentences[start : start + step], tokenizer)
        encoded = tokenizer(chunk, is_split_into_words=True, add_special_tokens=False, verbose=False)
        for offset, ids in enumerate(encoded["input_ids"]):
            word_ids = encoded.word_ids(offset)
            starts = [w if w is not None and (i == 0 or word_ids[i - 1] != w) else -1 for i, w in enumerate(word_ids)]
            windows.extend(_cut(start + offset, ids, starts, body, stride, tokenizer))
    return windows


def _cut(sentence: int, ids: list[int], starts: list[int], body: int, stride: int, tokenizer) -> list[Window]:
    """Windows of at most `body` sub-tokens overlapping by about `stride`, cut at word starts."""
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    pieces = []
    begin = 0
    while True:
        end = min(len(ids), begin + body)
        # never split a word: move the end back to a word start when possible
        if end < len(ids):
            back = end
            while back > begin + 1 and starts[back] == -1:
                back -= 1
            end = back if back > begin + 1 else end
        pieces.append(Window(sentence, [cls] + ids[begin:end] + [sep], [-1] + starts[begin:end] + [-1]))
        if end >= len(ids):
            break
        nxt = max(begin + 1, end - stride)
        while nxt < end and starts[nxt] == -1:
            nxt += 1
        begin = nxt if nxt < end else end
    return pieces


def window_labels(window: Window, tags: list[str], label_ids: dict[str, int]) -> list[int]:
    """Per sub-token, the label of the word it starts; IGNORE elsewhere and for a word not judged (`?`)."""
    return [label_ids.get(tags[w], IGNORE) if w >= 0 else IGNORE for w in window.word_index]


def merge_predictions(windows: list[Window], scores: list, n_words: list[int]) -> list[list]:
    """Per sentence, per word: the score vector from the window where the word is most central."""
    merged: list[list] = [[None] * n for n in n_words]
    best_margin: list[list[int]] = [[-1] * n for n in n_words]
    for window, window_scores in zip(windows, scores):
        positions = [i for i, w in enumerate(window.word_index) if w >= 0]
        for rank, position in enumerate(positions):
            word = window.word_index[position]
            margin = min(rank, len(positions) - 1 - rank)
            if margin > best_margin[window.sentence][word]:
                best_margin[window.sentence][word] = margin
                merged[window.sentence][word] = window_scores[position]
    return merged


# On a CPU, a forward pass over more padded tokens than this is slower per token (its activations leave the
# caches; attention grows with the square of the length): 2,000 Quechua corpus lines at batch size 128 ran 3x
# faster capped here, and at any batch size from 32 to 512 alike. A GPU takes whole batches.
CPU_MAX_TOKENS = 2048


def length_batches(windows: list[Window], batch_size: int, max_tokens: int | None = None) -> list[list[int]]:
    """Indices grouped so that each batch holds windows of similar length (little padding): at most
    `batch_size` windows and, with `max_tokens`, at most that many tokens once padded (a longer window goes
    alone)."""
    batches: list[list[int]] = []
    batch: list[int] = []
    for index in sorted(range(len(windows)), key=lambda i: len(windows[i].input_ids)):
        padded = (len(batch) + 1) * len(windows[index].input_ids)  # ascending: the newcomer sets the width
        if batch and (len(batch) == batch_size or (max_tokens and padded > max_tokens)):
            batches.append(batch)
            batch = []
        batch.append(index)
    return batches + [batch] if batch else batches


def padded(windows: list[Window], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, attention mask) of windows padded to the longest, int64 as both runtimes take them."""
    ids = np.full((len(windows), max(len(w.input_ids) for w in windows)), pad_id, np.int64)
    for row, window in enumerate(windows):
        ids[row, : len(window.input_ids)] = window.input_ids
    return ids, (ids != pad_id).astype(np.int64)


def predict_windows(
    sentences: list[list[str]],
    tokenizer,
    labels: list[str],
    run_batch: Callable[[list[Window]], np.ndarray],
    max_len: int,
    batch_size: int,
    max_tokens: int | None,
    stride: int = STRIDE,
) -> list[np.ndarray]:
    """Per sentence, a (words, labels) array of tag probabilities, whatever runs the model: `run_batch` takes
    windows of similar length and returns their (windows, sub-tokens, labels) probabilities."""
    windows = windows_for(sentences, tokenizer, max_len, stride)
    probabilities: list = [None] * len(windows)
    for batch in length_batches(windows, batch_size, max_tokens):
        for row, probs in zip(batch, run_batch([windows[i] for i in batch])):
            probabilities[row] = probs
    # A word with no sub-token (nothing the tokenizer keeps) is outside any entity.
    outside = np.eye(len(labels), dtype=np.float32)[labels.index("O") if "O" in labels else 0]
    merged = merge_predictions(windows, probabilities, [len(s) for s in sentences])
    return [
        np.stack([outside if p is None else p for p in words]) if words else np.zeros((0, len(labels)), np.float32)
        for words in merged
    ]
