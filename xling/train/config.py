"""The options of every training command, in one place and without torch: `xling <command> --help`
reads them without loading a model library.

One dataclass per command (`TaskAdapterOptions`, `FusionOptions`, `SelfTrainingOptions` here; the masked-LM
commands' `LanguageAdapterOptions` and `EncoderOptions` in `text_config.py`), built from what they share:
`RunOptions` (where, on what model), `TaggingRunOptions` (labelled tagging data) and the nested `TrainConfig`
(the loop) and `MaskingConfig` (masked-LM).
"""

from __future__ import annotations

from dataclasses import dataclass

from xling.adapters.composition import check_name
from xling.adapters.fusion.config import FusionConfig
from xling.adapters.registry import AdapterChoice, adapter_option
from xling.data.decoding import DECODER_HELP, DEFAULT_DECODER, check_decoder
from xling.data.labels import TASKS, parse_label_map
from xling.data.schemes import SCHEME_HELP, SCHEMES, check_scheme
from xling.device import DEVICE_HELP, PRECISION_HELP, check_device, check_precision
from xling.errors import XlingError
from xling.given_data import LabelledData, LabelledSources, TextData, sources_of
from xling.methods import METHODS, check_method
from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.options import MAX_BATCH, MAX_SEED, MAX_STEPS, MAX_WINDOW, at_least, at_most, comma_list, opt, positive
from xling.paths import WORKSPACE_HELP
from xling.tagging.spec import TaggerSpec
from xling.workspace import LANG_ADAPTER_HELP

MIN_WINDOW = 8  # sub-tokens: the special tokens and a few pieces of text
TRACKERS = ("tensorboard", "wandb", "mlflow")  # accelerate's names


@dataclass
class TrainConfig:
    max_steps: int | None = opt(None, "Optimiser steps; when unset, --epochs decides.", name="steps")
    epochs: float = opt(1.0, "Passes over the training data.", clears="max_steps")
    batch_size: int = opt(8, "Examples per micro-batch.")
    grad_accum: int = opt(1, "Micro-batches per optimiser step.")
    learning_rate: float | None = opt(1e-4, "Peak learning rate.", name="lr")  # None: the objective's default
    warmup: float = opt(0.06, "Warm-up: a fraction of all steps (below 1) or a number of steps.")
    weight_decay: float = opt(0.0, hidden=True)
    max_grad_norm: float = opt(1.0, hidden=True)
    eval_every: int | None = opt(100, "Evaluate every N steps; unset: once per epoch.")
    checkpoint_every: int = opt(100, "Save a resumable checkpoint every N steps.")
    log_every: int = opt(10, "Write the mean loss, learning rate and step time to train_log.jsonl every N steps.")
    patience: int | None = opt(None, "Stop after this many evaluations without improvement (0: never stop early).")
    seed: int = opt(42, "Random seed (data order, initialisation, masking).")
    # off: a task adapter trained 1.3x faster on a CPU at the same English F1, but 2.9 lower zero-shot (3 seeds)
    encoder_dropout: bool = opt(True, "Dropout in the frozen encoder while adapters train (off: faster).")
    device: str = opt("auto", DEVICE_HELP)
    precision: str = opt("auto", PRECISION_HELP)
    report_to: str | None = opt(
        None,
        "Log loss, learning rate and evaluations to tensorboard, wandb or mlflow (accelerate's trackers; TensorBoard "
        "writes under WORKSPACE/MODEL/logs/).",
        choices=TRACKERS,
    )

    def __post_init__(self):
        if self.report_to is not None and self.report_to not in TRACKERS:
            raise XlingError(f"report-to must be one of {', '.join(TRACKERS)}, not {self.report_to!r}")
        for name in ("batch_size", "grad_accum", "eval_every", "checkpoint_every", "log_every"):
            at_least(name, getattr(self, name), 1)
        at_least("patience", self.patience, 0)  # 0 as unset: a recipe's TOML has no null
        at_least("steps", self.max_steps, 1)
        at_most("steps", self.max_steps, MAX_STEPS)
        at_most("batch_size", self.batch_size, MAX_BATCH)
        at_most("grad_accum", self.grad_accum, MAX_BATCH)
        at_most("epochs", self.epochs, MAX_STEPS)
        positive("epochs", self.epochs)
        positive("lr", self.learning_rate)
        for name in ("warmup", "weight_decay", "max_grad_norm"):
            at_least(name, getattr(self, name), 0)
        at_least("seed", self.seed, 0)
        at_most("seed", self.seed, MAX_SEED)
        check_device(self.device)
        check_precision(self.precision)


@dataclass
class MaskingConfig:
    probability: float = opt(0.15, "Share of pieces to mask.", name="mask_prob")
    whole_word: bool = opt(False, "Mask whole words instead of single pieces.")

    def __post_init__(self):
        if not 0 < self.probability < 1:
            raise XlingError(f"mask-prob must be between 0 and 1, not {self.probability}")


@dataclass(kw_only=True)
class RunOptions:
    """What every training command takes besides its own options: where, on what model, and what to do
    with an earlier adapter or an interrupted run."""

    model: str = opt(DEFAULT_MODEL, MODEL_HELP)
    workspace: str | None = opt(None, WORKSPACE_HELP)
    overwrite: bool = opt(False, "Replace an existing adapter of the same name.")
    restart: bool = opt(False, "Discard an interrupted run instead of resuming it.")

    def run_name(self) -> str:
        """The name the run saves under: `--name`, else the command's default (`default_name`)."""
        return self.name or self.default_name()


@dataclass(kw_only=True)
class TaggingRunOptions(RunOptions):
    """What every run on labelled tagging data shares (task adapters, baselines, fusion, self-training)."""

    drop_labels: list[str] = opt(factory=list, help="Entity types to turn into O, e.g. MISC.", parse=comma_list)
    label_map: dict[str, str] = opt(
        factory=dict, help="Rename entity types, e.g. PERSON=PER,LOCATION=LOC.", parse=parse_label_map
    )
    max_len: int | None = opt(256, "Longest window in sub-tokens; longer sentences are windowed.")
    decoder: str = opt(DEFAULT_DECODER, DECODER_HELP)  # dev predictions are decoded as at tagging time
    scheme: str = opt("auto", SCHEME_HELP, choices=SCHEMES)

    def __post_init__(self):
        check_decoder(self.decoder)
        check_scheme(self.scheme)
        at_least("max_len", self.max_len, MIN_WINDOW)
        at_most("max_len", self.max_len, MAX_WINDOW)


# Multi-source training: every batch holds one language's sentences and runs through that language's adapter.
ALSO_TRAIN_HELP = (
    "Labelled data of another language, trained through its language adapter: LANG=DATA, "
    "e.g. es=corpus:conll2002-es/train; repeat for several."
)


def lang_pairs(items: list[str], option: str, example: str) -> list[tuple[str, str]]:
    """LANG=DATA values of a repeated option as (language, data) pairs."""
    pairs = []
    for item in items:
        lang, _, data = (part.strip() for part in item.partition("="))
        if not lang or not data:
            raise XlingError(f"{option} takes LANG=DATA, e.g. {example}, not {item!r}")
        pairs.append((lang, data))
    return pairs


def other_sources(also_train: list[str]) -> list[tuple[str, str]]:
    """`--also-train` values as (language, data) pairs."""
    return lang_pairs(also_train, "--also-train", "es=corpus:conll2002-es/train")


@dataclass
class TaskAdapterOptions(TaggingRunOptions):
    lang: str = opt(help="Language of the training data; its language adapter is stacked below.")
    # one source, or several read one after the other (e.g. silver and gold)
    train: LabelledSources = opt(
        help="Training data: a CoNLL file, corpus:NAME/SPLIT, wikiann:LANG or hf:DATASET[:CONFIG[:SPLIT]]; repeat for several."
    )
    dev: LabelledData = opt(help="Dev data for model selection and early stopping.")
    also_train: list[str] = opt(factory=list, help=ALSO_TRAIN_HELP)
    task: str = opt("ner", "The task: ner.", argument=1, choices=TASKS)
    name: str | None = opt(None, "Name of the trained task adapter (default: TASK-LANG, e.g. ner-en).")
    method: str = opt(
        "adapter", ", ".join(f"{m.name} ({m.help})" for m in METHODS.values()) + ".", choices=tuple(METHODS)
    )
    train_limit: int | None = opt(None, "Train on the first N sentences only.")
    dev_limit: int | None = opt(None, "Select on the first N dev sentences only.")
    use_lang_adapter: bool = opt(
        True, "Train the task adapter without a language adapter below it.", name="no_lang_adapter", invert=True
    )
    lang_adapter: str | None = opt(None, LANG_ADAPTER_HELP)
    init_from: str | None = opt(None, "Continue a trained task adapter (few-shot target-language training).")
    adapter: AdapterChoice = adapter_option("madx-task")
    # learning rate None: the method's
    training: TrainConfig = opt(
        factory=lambda: TrainConfig(epochs=3, batch_size=32, learning_rate=None, eval_every=None, patience=2),
        overrides={
            "lr": {
                "help": "Peak learning rate (default: "
                + ", ".join(f"{m.learning_rate:g} {m.name}" for m in METHODS.values())
                + ")."
            }
        },
    )

    def default_name(self) -> str:
        return METHODS[self.method].default_name(self.task, self.lang, self.use_lang_adapter)

    def trained_on(self) -> list[str]:
        """Every source of its training sentences, as given (a model card's data)."""
        return sources_of(self.train) + [data for _, data in other_sources(self.also_train)]

    def __post_init__(self):
        if self.name is not None:
            check_name(self.name)  # before any model loads
        super().__post_init__()
        self.adapter = AdapterChoice.of(self.adapter)
        other_sources(self.also_train)
        at_least("train_limit", self.train_limit, 1)
        at_least("dev_limit", self.dev_limit, 1)
        check_method(self.method)


@dataclass
class FusionOptions(TaggingRunOptions):
    lang: str = opt(help="Language of the training data; its language adapter goes below the fusion.")
    adapters: list[str] = opt(help="Task adapters to fuse, comma-separated, e.g. ner-en,ner-es.", parse=comma_list)
    train: LabelledData = opt(help="Training data (e.g. the 100 Quechua training sentences).")
    dev: LabelledData = opt(help="Dev data for model selection and early stopping.")
    task: str = opt("ner", "The task: ner.", argument=1, choices=TASKS)
    name: str | None = opt(None, "Name of the fusion (default: TASK-fusion-LANG).")
    use_lang_adapter: bool = opt(True, "Fuse without a language adapter below.", name="no_lang_adapter", invert=True)
    fusion: FusionConfig = opt(factory=FusionConfig)
    # learning rate as in the AdapterFusion paper
    training: TrainConfig = opt(
        factory=lambda: TrainConfig(epochs=10, batch_size=16, learning_rate=5e-5, eval_every=None, patience=3)
    )

    def default_name(self) -> str:
        return f"{self.task}-fusion-{self.lang}"

    def trained_on(self) -> list[str]:
        return [self.train]


CONFIDENCE_OF = ("words", "entities")


@dataclass
class SelfTrainingOptions(TaggingRunOptions):
    lang: str = opt(help="Language of the text; its language adapter goes under the task adapter.")
    corpus: TextData = opt(help="Unlabelled text of the language: files, folders or globs.", argument=2)
    dev: LabelledData = opt(help="Labelled dev data, used only to pick each round's best epoch and the best round.")
    source: str = opt(
        "ner-en", "Task adapter that labels the first round and that every round starts from.", name="from"
    )
    task: str = opt("ner", "The task: ner.", argument=1, choices=TASKS)
    name: str | None = opt(
        None, "Name of the result, the round best on dev (default: TASK-LANG-self); each round is NAME-roundK."
    )
    labelled: list[str] = opt(
        factory=list,
        help="Labelled data of the language added to every round's pseudo-labels (e.g. 100 gold sentences); repeat for several.",
    )
    # e.g. English gold sentences through the English adapter, so that rounds do not drift from the source task
    also_train: list[str] = opt(factory=list, help=ALSO_TRAIN_HELP)
    rounds: int = opt(2, "Rounds of tagging, selecting and training.")
    # Transferred models are unsure on the new language: at 0.9 under 1% of the sentences passed.
    threshold: float = opt(0.5, "Keep a sentence when its tag probabilities (see --confidence-of) reach this.")
    confidence_of: str = opt(
        "entities",
        "Whose probabilities must reach --threshold: the entities' words (entities), or every word's (words).",
    )
    max_per_type: int | None = opt(1000, "At most this many kept sentences per entity type (balance); 0: no cap.")
    max_sentences: int | None = opt(5000, "Tag a seeded sample of this many corpus lines per round; 0: all.")
    # below train-task's 1e-3: on pseudo-labels 1e-3 did no better over 3 seeds (README, self-training)
    training: TrainConfig = opt(
        factory=lambda: TrainConfig(epochs=3, batch_size=32, learning_rate=5e-4, eval_every=None, patience=2)
    )

    def default_name(self) -> str:
        return f"{self.task}-{self.lang}-self"

    def labeller(self, adapter: str) -> TaggerSpec:
        """The tagger of a round's pseudo-labels: `adapter` over the language adapter, on the training's device and
        precision (its settings are this command's own options, so it is derived, not nested)."""
        return TaggerSpec(
            self.lang,
            self.task,
            adapter,
            model=self.model,
            workspace=self.workspace,
            decoder=self.decoder,
            device=self.training.device,
            precision=self.training.precision,
        )

    def __post_init__(self):
        if self.name is not None:
            check_name(self.name)  # before any model loads
        super().__post_init__()
        other_sources(self.also_train)
        if self.rounds < 1:
            raise XlingError("rounds must be at least 1")
        if not 0 < self.threshold < 1:
            raise XlingError("threshold must be between 0 and 1")
        if self.confidence_of not in CONFIDENCE_OF:
            raise XlingError(f"confidence-of must be one of {', '.join(CONFIDENCE_OF)}, not {self.confidence_of!r}")
        for key in ("max_per_type", "max_sentences"):
            if getattr(self, key) == 0:
                setattr(self, key, None)  # 0 on the command line: no limit
            elif getattr(self, key) is not None and getattr(self, key) < 1:
                raise XlingError(f"{key.replace('_', '-')} must be at least 1")


@dataclass
class SoupOptions:
    """`xling soup`: task adapters trained alike averaged weight by weight into one (`xling.train.soup`)."""

    adapters: list[str] = opt(
        help="Task adapters to average, comma-separated names or folders, e.g. ner-qu-s1,ner-qu-s2,ner-qu-s3: the "
        "seeds of one run (same settings, labels and starting adapter).",
        parse=comma_list,
    )
    name: str = opt(help="Name of the averaged task adapter.")
    model: str = opt(DEFAULT_MODEL, MODEL_HELP)
    workspace: str | None = opt(None, WORKSPACE_HELP)
    overwrite: bool = opt(False, "Replace an existing adapter of the same name.")

    def __post_init__(self):
        if self.name is not None:  # unset while the command line builds its help
            check_name(self.name)
        if self.adapters is not None and len(set(self.adapters)) < 2:
            raise XlingError(f"a soup averages two task adapters or more, not {', '.join(self.adapters) or 'none'}")
