"""Resolve a model spec (embedded alias, Hugging Face id or local directory) to `(model, tokenizer)`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from xling.errors import XlingError, first_line, is_out_of_memory
from xling.fileio import read_json
from xling.models.embedded import EMBEDDED_ALIASES, EMBEDDED_NAME, UPSTREAM_ID, embedded_dir, is_conversion
from xling.options import opt

DEFAULT_MODEL = "e5-small"
MODEL_HELP = "Base model: e5-small (embedded), a Hugging Face id or a local directory."


@dataclass(frozen=True)
class ModelIdentity:
    """What `ModelSpec.parse` decided of a model, recorded where a run or an adapter names its base model, so that
    cards and exports read it rather than parse the spelling again."""

    kind: str  # embedded, folder or hub
    label: str  # its workspace's name
    hub_id: str | None  # the Hub model it is (the embedded default's upstream one); None for a local folder


@dataclass(frozen=True)
class ModelSpec:
    """What `--model` names, decided once: the embedded default (by one of its aliases), a local folder (a path,
    or a name a folder here has), or a Hugging Face Hub id."""

    given: str
    kind: str  # embedded, folder or hub

    @classmethod
    def parse(cls, spec: str) -> ModelSpec:
        if spec in EMBEDDED_ALIASES:
            return cls(spec, "embedded")
        if not spec or spec.startswith(("/", ".", "~")) or Path(spec).expanduser().is_dir():
            return cls(spec, "folder")
        return cls(spec, "hub")

    @property
    def folder(self) -> Path | None:
        return Path(self.given).expanduser() if self.kind == "folder" else None

    @property
    def label(self) -> str:
        """A short, filesystem-safe name for the model, used to separate workspaces."""
        if self.kind == "embedded":
            return EMBEDDED_NAME
        if self.kind == "hub":
            return self.given.replace("/", "--")
        try:
            return self.folder.resolve().name
        except (OSError, RuntimeError) as err:  # a link that leads back to itself (RuntimeError before Python 3.13)
            raise XlingError(f"model directory {self.given} cannot be followed: {err}") from None

    @property
    def hub_id(self) -> str | None:
        """Its Hub id (the embedded default's upstream model); None for a local folder."""
        return {"embedded": UPSTREAM_ID, "hub": self.given}.get(self.kind)

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity(self.kind, self.label, self.hub_id)

    def resolve(self, on_step: Callable[[str], None] = lambda step: None) -> str:
        """A path or Hub id that `from_pretrained` accepts; converts the embedded model on first use."""
        if self.kind == "embedded":
            return str(embedded_dir(on_step))
        if self.kind == "folder" and not self.folder.is_dir():
            raise XlingError(f"model directory {self.given} does not exist")
        return str(self.folder) if self.kind == "folder" else self.given


def resolve_model_dir(spec: str, on_step: Callable[[str], None] = lambda step: None) -> str:
    return ModelSpec.parse(spec).resolve(on_step)


def model_label(spec: str) -> str:
    return ModelSpec.parse(spec).label


def hub_id(spec: str) -> str | None:
    return ModelSpec.parse(spec).hub_id


WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
PICKLES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")
# what a tokenizer is read from: its fast form, or the vocabulary or sentencepiece model of its slow one
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "sentencepiece.bpe.model", "spm.model", "tokenizer.model")


def hub_id_of_label(label: str) -> str | None:
    """The Hub id of a model by the label xling records for it (`model_label`): the embedded default's upstream
    model, `org/name` for `org--name`; None for a local folder's name, which names no Hub model."""
    if label == EMBEDDED_NAME:
        return UPSTREAM_ID
    return label.replace("--", "/", 1) if "--" in label else None


def check_local_folder(folder: Path) -> None:
    """A local model folder is whole before Transformers reads it: a config naming a known architecture and no
    code of its own, weights in safetensors whose headers and sizes hold, and a tokenizer's files (never a
    fallback tokenizer). A Hub id is checked when it is fetched."""
    if not folder.is_dir():
        return
    check_local_config(folder)
    if not any((folder / name).is_file() for name in WEIGHT_FILES):
        pickled = [name for name in PICKLES if (folder / name).is_file()]
        said = f"only {pickled[0]}, a pickle, which xling never loads" if pickled else "no model.safetensors"
        raise XlingError(f"model folder {folder} holds {said}: save its weights as safetensors")
    for file in sorted(folder.glob("*.safetensors")):
        check_safetensors(file)
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise XlingError(
            f"model folder {folder} has no tokenizer files ({', '.join(TOKENIZER_FILES)}): save the tokenizer beside "
            "the weights (tokenizer.save_pretrained)"
        )


def check_safetensors(file: Path) -> None:
    """A safetensors file whose header reads and whose tensors lie within the file, or one line naming it."""
    from safetensors import safe_open

    try:
        with safe_open(str(file), "pt") as opened:
            opened.keys()
    except Exception as err:  # safetensors' own words: a cut file, a header out of bounds, not safetensors at all
        if is_out_of_memory(err):  # a whole file that memory could not hold: the command line says memory
            raise
        raise XlingError(f"{file} is damaged ({str(err).splitlines()[0][:120]}): not loaded") from None


def check_local_config(folder: Path) -> None:
    """A local model folder's config.json names a known architecture and asks to run no code of its own."""
    if not (folder / "config.json").is_file():
        return  # a Hub id, or a folder Transformers will report on
    config = read_json(folder / "config.json")
    if not isinstance(config, dict) or not isinstance(config.get("model_type"), str):
        raise XlingError(f"{folder}/config.json has no model_type, so no architecture can be chosen for it")
    if "auto_map" in config:
        raise XlingError(
            f"{folder}/config.json asks to run code shipped with the model (auto_map); xling never runs a "
            "model's own code: use a model whose architecture Transformers has"
        )


def load_model(
    spec: str = DEFAULT_MODEL,
    on_step: Callable[[str], None] = lambda step: None,
    inference_only=False,
    words_tokenizer=False,
):
    """Load the bare encoder (no task head) and its tokenizer, in eval mode. `inference_only`: the embedded model
    comes without Transformers (`xling.models.light`: a start in a fraction of the time and memory, for tagging),
    named by an alias or by the folder xling converted it into. `words_tokenizer`: its tokenizer alone comes
    without Transformers (`LightTokenizer`, which tokenizes pre-tokenised words, all that tagging and training a
    tagger ask of it; Transformers' holds 300 MB for a whole training run)."""
    light = light_folder(spec, on_step) if inference_only or words_tokenizer else None
    if light is not None:  # imported only where used: another model's loading needs none of it
        from xling.models.light import LightTokenizer, load_light_encoder
    if inference_only and light is not None:
        on_step("loading the encoder")
        model = load_light_encoder(light)
        model.name_or_path, model.xling_hub_id = model_label(spec), hub_id(spec)
        return model, LightTokenizer(light)
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    from transformers.models.auto.modeling_auto import MODEL_MAPPING

    path = resolve_model_dir(spec, on_step)
    check_local_folder(Path(path))
    try:
        config = AutoConfig.from_pretrained(path)
        kwargs = {}
        model_class = MODEL_MAPPING.get(type(config), None)
        # A pooler is never used for token-level work; not building it avoids a "newly initialised" warning.
        if model_class is not None and "add_pooling_layer" in inspect.signature(model_class.__init__).parameters:
            kwargs["add_pooling_layer"] = False
        on_step("loading the encoder")
        # shapes are compared below, so that a mismatch is named in one line rather than in Transformers' report
        kwargs |= {"output_loading_info": True, "ignore_mismatched_sizes": True}
        with no_transformers_bars():
            model, found = AutoModel.from_pretrained(path, config=config, **kwargs)
    except (OSError, ValueError, KeyError, RuntimeError) as err:  # Transformers' words for a folder it cannot read
        raise XlingError(f"cannot load model {spec!r}: {first_line(err)[:300]}") from None
    try:
        tokenizer = LightTokenizer(light) if light is not None else AutoTokenizer.from_pretrained(path)
    except Exception as err:  # noqa: BLE001 - tokenizers' Rust errors and Transformers' alike: the files are named
        raise XlingError(
            f"cannot read the tokenizer of {spec!r} ({tokenizer_files(Path(path))}): {first_line(err)[:300]}"
        ) from None
    check_loaded(spec, found, config, tokenizer, Path(path))
    model.name_or_path, model.xling_hub_id = model_label(spec), hub_id(spec)
    model.eval()
    return model, tokenizer


def light_folder(spec: str, on_step: Callable[[str], None]) -> Path | None:
    """The embedded model's folder where `spec` names it; None for any other model."""
    parsed = ModelSpec.parse(spec)
    if parsed.kind == "embedded":
        return embedded_dir(on_step)
    return parsed.folder if parsed.kind == "folder" and is_conversion(parsed.folder) else None


@contextmanager
def no_transformers_bars() -> Iterator[None]:
    """Transformers' own tqdm bars (loading and writing weights) off while xling loads or saves a model, and as they
    were after: they would cut into xling's progress and output, in Python as on the command line (which sets
    `HF_HUB_DISABLE_PROGRESS_BARS`)."""
    from transformers.utils import logging

    shown = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            logging.enable_progress_bar()


def tokenizer_files(folder: Path) -> str:
    """The tokenizer's files a model folder holds, for a message (a Hub id's come from the Hub)."""
    names = [name for name in (*TOKENIZER_FILES, "tokenizer_config.json") if (folder / name).is_file()]
    return ", ".join(str(folder / name) for name in names) or "the Hub's"


def check_loaded(spec: str, found: dict, config, tokenizer, folder: Path) -> None:
    """Every weight the architecture needs was in the files, in its shape, and the tokenizer's ids fit the
    embeddings: never a model with layers started at random, never ids past the vocabulary, never a stray
    tokenizer that reaches a few of the embeddings."""
    missing = sorted(found.get("missing_keys") or ())
    mismatched = sorted(str(key) for key, *_ in found.get("mismatched_keys") or ())
    if missing or mismatched:
        listed = missing or mismatched
        more = f" and {len(listed) - 3} more" if len(listed) > 3 else ""
        said = "lacks" if missing else "holds in another shape"
        raise XlingError(f"model {spec!r} {said} weights its architecture needs: {', '.join(listed[:3])}{more}")
    vocabulary = getattr(config, "vocab_size", None)
    # embeddings may have a few rows more than the tokenizer's ids (padded to a round number), never twice as many
    if vocabulary is not None and not vocabulary / 2 <= len(tokenizer) <= vocabulary:
        raise XlingError(
            f"model {spec!r}: its tokenizer ({tokenizer_files(folder)}) has {len(tokenizer):,} ids but its embeddings {vocabulary:,}: "
            "not a pair; save the model's own tokenizer beside it (tokenizer.save_pretrained)"
        )


@dataclass
class PullOptions:
    spec: str = opt(DEFAULT_MODEL, "Embedded alias, Hugging Face id or local directory.", argument=1)
