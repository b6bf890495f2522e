"""A fast start for tagging with the embedded model: its BERT encoder for inference in plain torch, its weights
mapped from the converted `model.safetensors` rather than read into memory, and its tokenizer straight from
`tokenizer.json` with the `tokenizers` library.

Importing Transformers' BERT costs seconds and its tokenizer wrapper more; tagging needs neither. The modules
carry Transformers' BERT names and order (`embeddings`, `encoder.layer.N.attention.output.dropout`, ...), so
adapters attach by the same paths, and `tests/test_models.py` checks the outputs against `BertModel`'s.
Training keeps Transformers' model (`xling.models.loading.load_model`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from xling.fileio import read_json

# Modules are made without storage (the weights are assigned from the file); passing the device to each, not a
# `torch.device` block, keeps torch from loading its Python reference kernels (a second and a half).
META = torch.device("meta")
SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def empty(rows: int, c) -> torch.Tensor:
    return torch.empty(rows, c.hidden_size, device=META)


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, c.pad_token_id, _weight=empty(c.vocab_size, c))
        self.position_embeddings = nn.Embedding(
            c.max_position_embeddings, c.hidden_size, _weight=empty(c.max_position_embeddings, c)
        )
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size, _weight=empty(c.type_vocab_size, c))
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps, device=META)
        self.dropout = nn.Dropout(0.0)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        hidden = self.word_embeddings(input_ids) + self.token_type_embeddings.weight[0]  # as BertModel adds them
        hidden = hidden + self.position_embeddings(positions)
        return self.dropout(self.LayerNorm(hidden))


class SelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.num_attention_heads
        self.query, self.key, self.value = (nn.Linear(c.hidden_size, c.hidden_size, device=META) for _ in range(3))

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, length, width = hidden.shape

        def split(x):
            return x.view(batch, length, self.heads, width // self.heads).transpose(1, 2)

        q, k, v = split(self.query(hidden)), split(self.key(hidden)), split(self.value(hidden))
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1 / math.sqrt(width // self.heads))
        return context.transpose(1, 2).reshape(batch, length, width)


class Output(nn.Module):
    """`LayerNorm(dropout(dense(x)) + residual)`: the hooks read `dropout`'s output and `LayerNorm`'s input."""

    def __init__(self, c, inputs: int):
        super().__init__()
        self.dense = nn.Linear(inputs, c.hidden_size, device=META)
        self.dropout = nn.Dropout(0.0)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps, device=META)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = SelfAttention(c)
        self.output = Output(c, c.hidden_size)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.output(self.self(hidden, mask), hidden)


class Intermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size, device=META)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.dense(hidden))  # the embedded model's exact (erf) GELU


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.intermediate = Intermediate(c)
        self.output = Output(c, c.intermediate_size)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        attended = self.attention(hidden, mask)
        return self.output(self.intermediate(attended), attended)


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList(Layer(c) for _ in range(c.num_hidden_layers))


class LightConfig(SimpleNamespace):
    """The model's `config.json` as attributes, as Transformers' config gives them (`to_dict` as well)."""

    def to_dict(self) -> dict:
        return dict(vars(self))


class LightBert(nn.Module):
    """BERT's encoder for inference: `forward(input_ids, attention_mask).last_hidden_state`, as `BertModel`."""

    def __init__(self, config: LightConfig):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.encoder = Encoder(config)

    @property
    def base_model(self) -> LightBert:
        return self

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> SimpleNamespace:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        # keys that may be attended to, for each query (a view): ONNX Runtime's Attention takes no broadcast mask
        length = input_ids.shape[1]
        mask = attention_mask.bool()[:, None, None, :].expand(-1, 1, length, length)
        hidden = self.embeddings(input_ids)
        for layer in self.encoder.layer:
            hidden = layer(hidden, mask)
        return SimpleNamespace(last_hidden_state=hidden)


def mapped_safetensors(file: Path) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file as views of a copy-on-write memory map: pages are read when used (an
    embedding row when its token comes up), and nothing is copied."""
    with open(file, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    data = np.memmap(file, dtype=np.uint8, mode="c", offset=8 + size)
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        array = data[start:end].view(SAFETENSORS_DTYPES[entry["dtype"]]).reshape(entry["shape"])
        tensors[name] = torch.from_numpy(array)
    return tensors


def load_light_encoder(directory: Path) -> LightBert:
    """The converted embedded model in `directory` as a `LightBert`, its weights mapped, in eval mode."""
    settings = read_json(directory / "config.json")
    config = LightConfig(**settings)
    model = LightBert(config)
    weights = mapped_safetensors(directory / "model.safetensors")
    unused = [key for key in weights if key.startswith("pooler.")]  # a checkpoint's pooler: not for tokens
    model.load_state_dict({k: v for k, v in weights.items() if k not in unused}, strict=True, assign=True)
    return model.eval()


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
    lock. The first few thousand words are tokenized by a model of just the pieces that occur in them (the
    normaliser and pre-tokenizer the same, and the lowest-scoring piece kept, which sets the unknown piece's
    score): a Unigram segmentation only ever uses pieces inside the text, so the ids are the same
    (`tests/test_light.py` compares them on the real corpora). Past those words, the whole model loads once."""

    SUBSET_WORDS = 4096  # words tokenized through vocabulary subsets before the whole model loads

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._full = None
        self.words_seen = 0
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
        self, words: list[list[str]], is_split_into_words: bool = True, add_special_tokens: bool = True, **ignored
    ) -> Encoded:
        assert is_split_into_words
        self.words_seen += sum(map(len, words))
        if self.vocabulary is None or self.words_seen > self.SUBSET_WORDS or not self.vocabulary.covers(words):
            return Encoded(self.full.encode_batch(words, is_pretokenized=True, add_special_tokens=add_special_tokens))
        tokenizer, ids = self.vocabulary.subset_tokenizer(words)
        return Encoded(tokenizer.encode_batch(words, is_pretokenized=True, add_special_tokens=add_special_tokens), ids)

    def save_pretrained(self, directory: str | Path) -> None:
        for name in TOKENIZER_FILES:
            if (self.directory / name).is_file():
                shutil.copy(self.directory / name, Path(directory) / name)


class PieceVocabulary:
    """A Unigram tokenizer's pieces and scores as plain data, beside its pipeline without them (`SKELETON`): both
    cached next to `tokenizer.json` on first use, and read in a few hundredths of a second."""

    SKELETON, PIECES, SCORES = "tokenizer-skeleton.json", "tokenizer-pieces.bin", "tokenizer-scores.npy"
    SPECIAL = 4  # the first pieces (<s>, <pad>, </s>, <unk>), which keep their ids in every subset

    def __init__(self, skeleton, pieces: list[str], scores: np.ndarray, unk_id: int):
        self.skeleton, self.pieces, self.scores, self.unk_id = skeleton, pieces, scores, unk_id
        self.ids = dict(zip(pieces, range(len(pieces))))
        self.longest = max(map(len, pieces))
        self.kept = set(range(self.SPECIAL)) | {int(scores.argmin())}
        self.whole_only: list[str] = []

    @classmethod
    def load(cls, directory: Path) -> PieceVocabulary | None:
        """The vocabulary of the Unigram tokenizer in `directory`; None for another kind of tokenizer, or where its
        cache cannot be written."""
        from tokenizers import Tokenizer

        files = [directory / name for name in (cls.SKELETON, cls.PIECES, cls.SCORES)]
        if not all(f.is_file() for f in files) and not cls.cache(directory):
            return None
        spec = json.loads(files[0].read_text(encoding="utf-8"))
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
            write_text_atomic(directory / cls.SKELETON, json.dumps(spec))
        except OSError:  # a read-only model folder: the whole tokenizer serves
            return False
        return True

    def subset_tokenizer(self, words: list[list[str]]):
        """The skeleton with a Unigram model of the pieces inside `words`, and the model ids of its ids."""
        from tokenizers.models import Unigram

        chosen = set(self.kept)
        normalizer, pre_tokenizer = self.skeleton.normalizer, self.skeleton.pre_tokenizer
        normalize = normalizer.normalize_str if normalizer else str
        pre_tokenize = pre_tokenizer.pre_tokenize_str if pre_tokenizer else (lambda text: [(text, None)])
        for word in {word for sentence in words for word in sentence}:
            for text, _ in pre_tokenize(normalize(word)):
                for start in range(len(text)):
                    for end in range(start + 1, min(len(text), start + self.longest) + 1):
                        if (found := self.ids.get(text[start:end])) is not None:
                            chosen.add(found)
        ids = sorted(chosen)
        vocabulary = [(self.pieces[i], float(self.scores[i])) for i in ids]
        self.skeleton.model = Unigram(vocabulary, unk_id=self.unk_id, byte_fallback=False)
        return self.skeleton, ids
