"""The model's tokenizer straight from `tokenizer.json` with the `tokenizers` library, as tagging calls it: no
torch, no Transformers (the ONNX tagger and the embedded model's fast start use it)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from xling.fileio import read_json

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


class Encoded:
    """What tagging reads of a tokenizer's answer: `["input_ids"]` and `word_ids(i)`; `ids` maps a vocabulary
    subset's ids back to the model's (ids beyond it, the special tokens', are the model's already)."""

    def __init__(self, encodings, ids: list[int] | None = None):
        self.encodings, self.ids = encodings, ids

    def __getitem__(self, key: str) -> list[list[int]]:
        assert key == "input_ids"
        if self.ids is None:
            return [e.ids for e in self.encodings]
        ids, known = self.ids, len(self.ids)
        return [[ids[i] if i < known else i for i in e.ids] for e in self.encodings]

    def word_ids(self, index: int) -> list[int | None]:
        return self.encodings[index].word_ids


class LightTokenizer:
    """The model's fast tokenizer from `tokenizer.json`, as tagging calls it (words in, ids and word ids out).

    Building a Unigram model of 250,000 pieces takes the `tokenizers` library most of a second, holding Python's
    lock, and holds about 270 MB (its trie). Each call's words are tokenized by a model of just the pieces that
    occur in them (the normaliser and pre-tokenizer the same, and the lowest-scoring piece kept, which sets the
    unknown piece's score): a Unigram segmentation only ever uses pieces inside the text, so the ids are the same
    (`tests/test_light.py` compares them on the real corpora). The whole model loads only for a tokenizer of
    another kind, or text holding an added token."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._full = None
        settings = read_json(self.directory / "tokenizer_config.json")
        self.model_max_length = settings.get("model_max_length", 512)
        self.vocabulary = PieceVocabulary.load(self.directory)
        token_id = self.vocabulary.ids.get if self.vocabulary else self.full.token_to_id
        for role in ("cls", "sep", "pad", "mask", "unk"):
            token = settings.get(f"{role}_token")
            token = token["content"] if isinstance(token, dict) else token
            setattr(self, f"{role}_token_id", token_id(token) if token else None)

    @property
    def full(self):
        if self._full is None:
            from tokenizers import Tokenizer

            self._full = Tokenizer.from_file(str(self.directory / "tokenizer.json"))
        return self._full

    def __call__(
        self,
        words: list[list[str]],
        is_split_into_words: bool = True,
        add_special_tokens: bool = True,
        verbose: bool = True,  # Transformers' switch for its length warning: this tokenizer warns of nothing
    ) -> Encoded:
        """Pre-tokenised sentences' pieces; the keyword arguments it does not honour (`truncation`, `padding`,
        `max_length`) are refused, as Python refuses any unknown one, rather than silently dropped."""
        if not is_split_into_words:
            raise TypeError("LightTokenizer tokenizes pre-tokenised sentences only (is_split_into_words=True)")
        if self.vocabulary is None or not self.vocabulary.covers(words):
            return Encoded(self.full.encode_batch(words, is_pretokenized=True, add_special_tokens=add_special_tokens))
        tokenizer, ids = self.vocabulary.subset_tokenizer(words)
        return Encoded(tokenizer.encode_batch(words, is_pretokenized=True, add_special_tokens=add_special_tokens), ids)

    def __len__(self) -> int:
        """Its ids, as Transformers' tokenizers count them (the added tokens among them)."""
        return len(self.vocabulary.pieces) if self.vocabulary else self.full.get_vocab_size(with_added_tokens=True)

    def save_pretrained(self, directory: str | Path) -> None:
        for name in TOKENIZER_FILES:
            if (self.directory / name).is_file():
                shutil.copy(self.directory / name, Path(directory) / name)


def source_stamp(directory: Path) -> list[int]:
    """The size and modification time of `directory`'s tokenizer.json: a cache made from another is stale."""
    status = (directory / "tokenizer.json").stat()
    return [status.st_size, status.st_mtime_ns]


class PieceVocabulary:
    """A Unigram tokenizer's pieces and scores as plain data, beside its pipeline without them (`SKELETON`): both
    cached next to `tokenizer.json` on first use, and read in a few hundredths of a second."""

    SKELETON, PIECES, SCORES = "tokenizer-skeleton.json", "tokenizer-pieces.bin", "tokenizer-scores.npy"
    SPECIAL = 4  # the first pieces (<s>, <pad>, </s>, <unk>), which keep their ids in every subset
    REMEMBERED_WORDS = 200_000  # words whose pieces are kept from call to call (then forgotten, all at once)
    SOURCE = "xling_source"  # the skeleton's key for the size and time of the tokenizer.json it was cached from

    def __init__(self, skeleton, pieces: list[str], scores: np.ndarray, unk_id: int):
        self.skeleton, self.pieces, self.scores, self.unk_id = skeleton, pieces, scores, unk_id
        self.ids = dict(zip(pieces, range(len(pieces))))
        self.longest = max(map(len, pieces))
        self.kept = set(range(self.SPECIAL)) | {int(scores.argmin())}
        self.whole_only: list[str] = []
        self.found: dict[str, list[int]] = {}  # the pieces inside a word, as scanned (repeated words are most)
        normalizer, pre_tokenizer = skeleton.normalizer, skeleton.pre_tokenizer
        self.normalize = normalizer.normalize_str if normalizer else str
        self.pre_tokenize = pre_tokenizer.pre_tokenize_str if pre_tokenizer else (lambda text: [(text, None)])

    @classmethod
    def load(cls, directory: Path) -> PieceVocabulary | None:
        """The vocabulary of the Unigram tokenizer in `directory`; None for another kind of tokenizer, or where its
        cache cannot be written."""
        from tokenizers import Tokenizer

        files = [directory / name for name in (cls.SKELETON, cls.PIECES, cls.SCORES)]
        spec = json.loads(files[0].read_text(encoding="utf-8")) if all(f.is_file() for f in files) else {}
        if spec.pop(cls.SOURCE, None) != source_stamp(directory):  # none yet, or of another tokenizer.json
            if not cls.cache(directory):
                return None
            spec = json.loads(files[0].read_text(encoding="utf-8"))
            spec.pop(cls.SOURCE)
        pieces = files[1].read_bytes().decode("utf-8").split("\0")
        # Added tokens (<s>, <mask>) split words before the pre-tokenizer, and beyond the first pieces would take
        # other ids in a subset: text holding one goes through the whole tokenizer.
        added = spec.get("added_tokens") or []
        spec["added_tokens"] = [token for token in added if token["id"] < cls.SPECIAL]
        vocabulary = cls(Tokenizer.from_str(json.dumps(spec)), pieces, np.load(files[2]), spec["model"]["unk_id"])
        vocabulary.whole_only = [token["content"] for token in added]
        return vocabulary

    def covers(self, words: list[list[str]]) -> bool:
        """Whether a subset tokenizes `words` as the whole tokenizer does: no added token in them."""
        return not any(token in word for sentence in words for word in sentence for token in self.whole_only)

    @classmethod
    def cache(cls, directory: Path) -> bool:
        from xling.fileio import write_text_atomic

        stamp = source_stamp(directory)  # before reading: a file replaced meanwhile is cached again next time
        spec = read_json(directory / "tokenizer.json")
        model = spec.get("model", {})
        if (
            model.get("type") != "Unigram"
            or model.get("unk_id") not in range(cls.SPECIAL)
            or model.get("byte_fallback")
        ):
            return False
        pieces = [piece for piece, _ in model["vocab"]]
        if any("\0" in piece for piece in pieces):
            return False
        try:
            with open(directory / f".{cls.SCORES}.{os.getpid()}", "wb") as f:
                np.save(f, np.array([score for _, score in model["vocab"]], dtype=np.float64))
            os.replace(directory / f".{cls.SCORES}.{os.getpid()}", directory / cls.SCORES)
            write_text_atomic(directory / cls.PIECES, "\0".join(pieces))
            model["vocab"] = model["vocab"][: cls.SPECIAL]
            write_text_atomic(directory / cls.SKELETON, json.dumps(spec | {cls.SOURCE: stamp}))
        except OSError:  # a read-only model folder: the whole tokenizer serves
            return False
        return True

    def pieces_inside(self, word: str) -> list[int]:
        """The ids of the pieces that occur in `word` as the tokenizer normalises and pre-tokenizes it."""
        inside = []
        for text, _ in self.pre_tokenize(self.normalize(word)):
            for start in range(len(text)):
                for end in range(start + 1, min(len(text), start + self.longest) + 1):
                    if (found := self.ids.get(text[start:end])) is not None:
                        inside.append(found)
        return inside

    def subset_tokenizer(self, words: list[list[str]]):
        """The skeleton with a Unigram model of the pieces inside `words`, and the model ids of its ids."""
        from tokenizers.models import Unigram

        chosen = set(self.kept)
        if len(self.found) > self.REMEMBERED_WORDS:
            self.found.clear()
        for word in {word for sentence in words for word in sentence}:
            if (inside := self.found.get(word)) is None:
                inside = self.found[word] = self.pieces_inside(word)
            chosen.update(inside)
        ids = sorted(chosen)
        vocabulary = [(self.pieces[i], float(self.scores[i])) for i in ids]
        self.skeleton.model = Unigram(vocabulary, unk_id=self.unk_id, byte_fallback=False)
        return self.skeleton, ids
