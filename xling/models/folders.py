"""A model folder as Transformers writes one: what `xling train-encoder` saves, and every `-m` reads.

The encoder is saved with its masked-LM head under the names of its family's `...ForMaskedLM` class
(`bert.encoder...`, `cls.predictions...`), so the folder loads as that class in Transformers (a fill-mask
pipeline) and as the bare encoder in xling, and its head is the one `--mlm-head pretrained` trains under.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import save_file

from xling.fileio import atomic_directory
from xling.models.families import family_of

WEIGHTS_FILE = "model.safetensors"


def masked_lm_state(encoder, head: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The encoder's and head's weights under the names of its family's masked-LM class; `head` in
    `MaskedLMHead`'s names (dense, norm, bias)."""
    prefix = encoder.base_model_prefix
    state = {f"{prefix}.{name}": tensor for name, tensor in encoder.state_dict().items()}
    for checkpoint_name, head_name in family_of(encoder.config).mlm_head.items():
        for name, tensor in head.items():
            if head_name.endswith(".") and name.startswith(head_name):
                state[checkpoint_name + name[len(head_name) :]] = tensor
            elif name == head_name:
                state[checkpoint_name] = tensor
    return state


def write_model_folder(
    encoder, tokenizer, head: dict[str, torch.Tensor], directory: Path, overwrite: bool, extra_files: dict[str, str]
) -> Path:
    """config.json, the weights (`masked_lm_state`), the tokenizer's files and `extra_files` (name -> text), written
    atomically; an existing folder is replaced only with `overwrite`, and only if it holds a model."""
    config = encoder.config.to_dict()
    config["architectures"] = [type(encoder).__name__.removesuffix("Model") + "ForMaskedLM"]
    config.pop("_name_or_path", None)
    tensors = {name: t.detach().cpu().contiguous() for name, t in masked_lm_state(encoder, head).items()}
    with atomic_directory(Path(directory), overwrite=overwrite, replaces=(WEIGHTS_FILE,)) as staging:
        type(encoder.config).from_dict(config).to_json_file(staging / "config.json")
        save_file(tensors, staging / WEIGHTS_FILE, {"format": "pt"})  # from the tensors' memory: no second copy
        tokenizer.save_pretrained(str(staging))
        for name, text in extra_files.items():
            (staging / name).write_text(text)
    return Path(directory)
