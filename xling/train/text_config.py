"""The options of the commands that train by masked-language modelling on unlabelled text, without torch:
`train-lang` (`LanguageAdapterOptions`) and `train-encoder` (`EncoderOptions`)."""

from __future__ import annotations

from dataclasses import dataclass

from xling.adapters.composition import check_name
from xling.adapters.registry import AdapterChoice, adapter_option
from xling.errors import XlingError
from xling.given_data import TextData
from xling.models.loading import model_label
from xling.names import check_lang
from xling.options import MAX_WINDOW, at_least, at_most, opt, positive
from xling.train.config import MIN_WINDOW, MaskingConfig, RunOptions, TrainConfig, lang_pairs

MLM_HEADS = ("pretrained", "fresh")
DEFAULT_MLM_HEAD = "fresh"


@dataclass
class MaskedTextOptions(RunOptions):
    """What masked-language modelling on unlabelled text takes, for a language adapter or the encoder itself."""

    lang: str = opt(help="Language code, e.g. qu, es, en: the adapter's name.", argument=1)
    corpus: TextData = opt(help="Text files, folders or globs (CoNLL files count as text).", argument=2)
    seq_len: int = opt(128, "Tokens per training block.")
    masking: MaskingConfig = opt(factory=MaskingConfig)
    vocab_from_corpus: bool = opt(False, "Restrict the training softmax to pieces seen in the corpus (faster).")
    held_out: float = opt(0.02, "Share of lines held out for perplexity (kept within 1-5%).")
    name: str | None = opt(None, "Save the result under this name.")

    def trained_on(self) -> list[str]:
        """Every source of its training text, as given (a model card's data)."""
        return list(self.corpus)

    def __post_init__(self):
        if self.name is not None:
            check_name(self.name)  # before any model loads
        at_least("seq_len", self.seq_len, MIN_WINDOW)
        at_most("seq_len", self.seq_len, MAX_WINDOW)
        if not 0 < self.held_out < 1:
            raise XlingError(f"held-out must be a share between 0 and 1, not {self.held_out}")


@dataclass
class LanguageAdapterOptions(MaskedTextOptions):
    adapter: AdapterChoice = adapter_option("madx-lang")
    # No early stopping: held-out perplexity is reported, not used to select. 300 steps: past them a better language
    # model made a worse base for zero-shot NER (README, Results).
    training: TrainConfig = opt(factory=lambda: TrainConfig(max_steps=300, learning_rate=1e-4), without=("patience",))
    mlm_head: str = opt(
        DEFAULT_MLM_HEAD,
        "pretrained: train under the model's own masked-LM head, or the one xling ships for it, frozen (a fresh "
        "one where there is neither); fresh: train a new head with the adapter.",
        choices=MLM_HEADS,
    )
    name: str | None = opt(None, "Save the adapter under this name instead of the language code.")

    def default_name(self) -> str:
        return self.lang

    def __post_init__(self):
        super().__post_init__()
        self.adapter = AdapterChoice.of(self.adapter)
        if self.mlm_head not in MLM_HEADS:
            raise XlingError(f"mlm-head must be one of {', '.join(MLM_HEADS)}, not {self.mlm_head!r}")


# What `train-encoder --method` trains, and its default peak learning rate: a pretrained encoder continues at
# BERT's fine-tuning rates; LoRA's few weights start from zero and take a larger step (as in the LoRA paper).
ENCODER_METHODS = {
    "full": ("every weight of the encoder and its masked-LM head", 5e-5),
    "no-embeddings": ("every weight but the word embeddings (and so the head's tied decoder)", 5e-5),
    "lora": ("a low-rank update of every Linear layer, merged into it when saved, and the head", 5e-4),
}


@dataclass
class EncoderOptions(MaskedTextOptions):
    lang: str = opt(help="Language code of the corpus, e.g. qu: the language the encoder adapts to.", argument=1)
    also: list[str] = opt(
        factory=list,
        help="Text of another language mixed in (it keeps what the encoder knows of it): LANG=CORPUS, e.g. "
        "en=corpus:wikiann-en/train; repeat for several.",
    )
    parallel: list[str] = opt(
        factory=list,
        help="Parallel text for translation language modelling, one share of the mix: folders or files NAME.SRC "
        "beside NAME.LANG, e.g. corpus:americasnlp-es-qu.",
    )
    parallel_lang: str = opt("es", "The other language of --parallel: its files' suffix.")
    # MAFT and XLM-R sample languages by size to a power below 1; 2 keeps the target the largest share here
    temperature: float = opt(2.0, "Mix sources by size ** (1 / T): 1 by size, higher is flatter.")
    # no-embeddings: on 2 CPU cores a step took 1.2x a language adapter's, full 3.9x (AdamW over the 96 M embedding
    # weights of a 250k vocabulary; bench/encoder_step.py)
    method: str = opt(
        "no-embeddings",
        "; ".join(f"{name}: {what}" for name, (what, _) in ENCODER_METHODS.items()) + ".",
        choices=tuple(ENCODER_METHODS),
    )
    lora_rank: int = opt(16, "With --method lora: the rank of every Linear layer's update (alpha is twice it).")
    exclude: list[str] = opt(
        factory=list,
        help="Data whose sentences must never train (evaluation splits, e.g. corpus:wikiann-qu/dev): text lines "
        "and translation pairs holding one are left out; repeat for several.",
    )
    training: TrainConfig = opt(
        factory=lambda: TrainConfig(max_steps=2000, batch_size=16, learning_rate=None, eval_every=250),
        without=("patience", "encoder_dropout"),
        overrides={
            "lr": {
                "help": "Peak learning rate (default: "
                + ", ".join(f"{lr:g} {name}" for name, (_, lr) in ENCODER_METHODS.items())
                + ")."
            }
        },
    )
    name: str | None = opt(
        None, "Save the encoder under this name (default: MODEL-LANG, e.g. multilingual-e5-small-qu)."
    )

    def default_name(self) -> str:
        return f"{model_label(self.model)}-{self.lang}"

    def __post_init__(self):
        super().__post_init__()
        check_lang(self.parallel_lang)
        mixed_sources(self.also)
        positive("temperature", self.temperature)
        at_least("lora_rank", self.lora_rank, 1)
        if self.method not in ENCODER_METHODS:
            raise XlingError(f"method must be one of {', '.join(ENCODER_METHODS)}, not {self.method!r}")

    @property
    def learning_rate(self) -> float:
        return self.training.learning_rate or ENCODER_METHODS[self.method][1]

    def trained_on(self) -> list[str]:
        return list(self.corpus) + [corpus for _, corpus in mixed_sources(self.also)] + list(self.parallel)


def mixed_sources(also: list[str]) -> list[tuple[str, str]]:
    """`--also` values as (language, corpus) pairs."""
    return [(check_lang(lang), corpus) for lang, corpus in lang_pairs(also, "--also", "en=corpus:wikiann-en/train")]
