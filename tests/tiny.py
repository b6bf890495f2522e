"""Tiny randomly initialised encoders and a matching tokenizer, built inside the tests."""

from __future__ import annotations

import json
import os
import string
import subprocess
import sys
from pathlib import Path

import torch

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
WORDS = ["▁qusqu", "▁llaqta", "pi", "▁the", "▁city", "▁of", "▁lima", "▁peru", "▁juan", "▁maria", "▁wasi", "▁runa"]


def with_specials(tok):
    """A `tokenizers` model as Transformers' fast tokenizer, with XLM-R's special tokens around each sentence."""
    from tokenizers import AddedToken, processors
    from transformers import PreTrainedTokenizerFast

    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    tok.add_special_tokens([AddedToken(t, special=True) for t in SPECIALS + ["<mask>"]])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        cls_token="<s>",
        sep_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        model_max_length=64,
    )


def tiny_tokenizer():
    """An XLM-R style Unigram tokenizer over characters and a few whole words."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import Unigram

    chars = ["▁"] + [f"▁{c}" for c in string.ascii_lowercase] + list(string.ascii_lowercase + string.digits + ".,'-")
    vocab = [(p, 0.0) for p in SPECIALS] + [(w, -2.0) for w in WORDS] + [(c, -5.0) for c in chars] + [("<mask>", 0.0)]
    tok = Tokenizer(Unigram(vocab, unk_id=3, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    return with_specials(tok)


def tiny_gluing_tokenizer():
    """A tokenizer of Gemma's kind (mmBERT's): SentencePiece pieces where a space is `▁`, and no pre-tokenizer, so
    that only a space before a word marks where it starts: words given apart run together unless spaced."""
    from tokenizers import Tokenizer, normalizers
    from tokenizers.models import Unigram

    words = [w.lstrip("▁") for w in WORDS]
    chars = ["▁"] + list(string.ascii_lowercase + string.digits + ".,'-")
    vocab = [(p, 0.0) for p in SPECIALS] + [(f"▁{w}", -2.0) for w in words] + [(w, -2.5) for w in words]
    tok = Tokenizer(Unigram(vocab + [(c, -5.0) for c in chars] + [("<mask>", 0.0)], unk_id=3, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([normalizers.Lowercase(), normalizers.Replace(" ", "▁")])
    return with_specials(tok)


# Beyond the sizes: DeBERTa in the layout of mDeBERTa-v3 (relative attention, no absolute positions).
TINY_EXTRAS = {
    "deberta-v2": dict(
        relative_attention=True, position_buckets=16, pos_att_type=["p2c", "c2p"], position_biased_input=False
    ),
    "modernbert": dict(bos_token_id=0, eos_token_id=2, cls_token_id=0, sep_token_id=2),  # the tiny tokenizer's
}


def tiny_config(arch: str, vocab_size: int):
    """A 3-layer, 32-wide config of family `arch`, from xling's record of that family."""
    import transformers

    from xling.models.families import FAMILIES

    family = FAMILIES[arch]
    sizes = dict(zip(family.sizes, (32, 3, 4, 64)))
    return getattr(transformers, family.config_class)(
        vocab_size=vocab_size,
        max_position_embeddings=64 + family.position_offset,
        pad_token_id=1,
        **sizes,
        **TINY_EXTRAS.get(arch, {}),
    )


def tiny_model(arch: str, seed: int = 0):
    from transformers import AutoModel

    tokenizer = tiny_tokenizer()
    torch.manual_seed(seed)
    model = AutoModel.from_config(tiny_config(arch, len(tokenizer)))
    model.eval()
    return model, tokenizer


def save_tiny_model(arch: str, path: Path, seed: int = 0) -> Path:
    model, tokenizer = tiny_model(arch, seed)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


PEOPLE, PLACES, OTHER = ["juan", "maria"], ["lima", "qusqu", "peru"], ["the", "city", "of", "runa", "wasi"]


def synthetic_conll(path: Path, sentences: int, seed: int) -> Path:
    """WikiANN-style NER data over a tiny vocabulary: names are PER, places LOC."""
    import random

    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(sentences):
            for _ in range(rng.randint(3, 9)):
                r = rng.random()
                if r < 0.2:
                    f.write(f"en:{rng.choice(PEOPLE)}\tB-PER\n")
                elif r < 0.4:
                    f.write(f"en:{rng.choice(PLACES)}\tB-LOC\n")
                else:
                    f.write(f"en:{rng.choice(OTHER)}\tO\n")
            f.write("\n")
    return path


def run_xling(*args, env: dict | None = None, **options) -> subprocess.CompletedProcess:
    """`python -m xling ARGS` as a user runs it, with its output captured as text; `env` adds to the environment."""
    command = [sys.executable, "-m", "xling", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})}, **options)


def random_madx_adapters(model, out: Path, task_config=None) -> tuple[Path, Path]:
    """A MAD-X language adapter and a task adapter (Pfeiffer unless `task_config` says otherwise) with a head,
    with weights large enough to move every output."""
    from xling.adapters import BottleneckConfig
    from xling.adapters.heads import TaggingHead, TaggingHeadConfig
    from xling.adapters.saving import save

    torch.manual_seed(0)
    model.add_adapter("qu", BottleneckConfig.preset("madx-lang"))
    model.add_adapter("ner", task_config or BottleneckConfig.preset("pfeiffer"))
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
    model.add_head("ner", TaggingHead(model.hidden_size, TaggingHeadConfig(labels)))
    with torch.no_grad():
        for parameter in [*model.adapters.parameters(), *model.heads.parameters()]:
            parameter.normal_(0, 0.05)
    return save(model, "qu", out / "xling-qu"), save(model, "ner", out / "xling-ner")


def damaged_model_folders(root: Path) -> tuple[Path, list[tuple[Path, str]]]:
    """A tiny BERT's folder broken each way a copied or half-downloaded model folder comes broken: (folder, what
    the refusal says)."""
    import shutil

    from safetensors.torch import load_file, save_file

    whole = save_tiny_model("bert", root / "whole")

    def copy(name):
        return Path(shutil.copytree(whole, root / name))

    no_tokenizer = copy("no-tokenizer")
    for file in no_tokenizer.iterdir():
        if file.name not in ("config.json", "model.safetensors"):
            file.unlink()
    no_layer = copy("no-layer")
    weights = load_file(no_layer / "model.safetensors")
    save_file({k: v for k, v in weights.items() if ".layer.1." not in k}, no_layer / "model.safetensors")
    cut = copy("cut")
    data = (cut / "model.safetensors").read_bytes()
    (cut / "model.safetensors").write_bytes(data[: len(data) // 2])
    huge_header = copy("huge-header")
    (huge_header / "model.safetensors").write_bytes((10**15).to_bytes(8, "little") + data[8:])
    pickled = copy("pickled")
    torch.save(weights, pickled / "pytorch_model.bin")
    (pickled / "model.safetensors").unlink()
    stray_vocabulary = copy("stray-vocabulary")  # every tokenizer file gone but a short vocab.txt of its own
    for file in stray_vocabulary.iterdir():
        if file.name not in ("config.json", "model.safetensors"):
            file.unlink()
    (stray_vocabulary / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nqusqu\n")
    bad_tokenizer = copy("bad-tokenizer")
    (bad_tokenizer / "tokenizer.json").write_text("{ not json")
    wider = copy("wider")
    config = json.loads((wider / "config.json").read_text())
    (wider / "config.json").write_text(json.dumps(config | {"hidden_size": config["hidden_size"] * 2}))
    return whole, [
        (no_tokenizer, "has no tokenizer files"),
        (no_layer, "lacks weights its architecture needs: encoder.layer.1."),
        (cut, "model.safetensors is damaged"),
        (huge_header, "model.safetensors is damaged"),
        (pickled, "only pytorch_model.bin, a pickle, which xling never loads"),
        (wider, "holds in another shape weights its architecture needs: embeddings."),
        (stray_vocabulary, r"stray-vocabulary/vocab.txt\) has 6 ids but its embeddings 84"),
        (bad_tokenizer, r"cannot read the tokenizer of .*bad-tokenizer/tokenizer.json, "),
    ]
