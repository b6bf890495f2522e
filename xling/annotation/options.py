"""The options of `xling select` and `xling annotate` (no torch: `--help` reads them).

`SelectOptions` is also the annotation session's record (`session.json`): the page's retraining selects the
next batch with the options the session was started with, and the adapter trained from its answers."""

from __future__ import annotations

from dataclasses import dataclass

from xling.annotation.strategies import MODES, STRATEGIES
from xling.errors import XlingError
from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.names import check_lang
from xling.options import MAX_SEED, at_least, at_most, opt, shown
from xling.paths import WORKSPACE_HELP
from xling.tagging.spec import TaggerSpec
from xling.web import Address
from xling.workspace import check_name


def _one_of(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise XlingError(f"{name} must be one of {', '.join(choices)}, not {value!r}")


@dataclass
class SelectOptions:
    corpus: str = opt(
        help="Unlabelled text: a file or folder of one sentence per line (CoNLL files are read as such), or corpus:NAME.",
        argument=1,
    )
    # the model proposes tags for a person to correct: a single task adapter, in PyTorch
    tagger: TaggerSpec = opt(
        factory=lambda: TaggerSpec(batch_size=64),
        without=("task", "fusion", "ensemble", "no_lang_adapter", "runtime"),
        overrides={
            "task_adapter": {"help": "Task adapter that proposes the tags (default: ner-LANG if trained, else ner-en)."}
        },
    )
    session: str | None = opt(None, "The annotation session (default: the language code); its batches add up.")
    # random: on 701 qubert-qu/dev sentences uncertainty never beat it, up to 200 answers (results/active-qubert-qu/)
    strategy: str = opt("random", f"Which sentences first: {', '.join(STRATEGIES)}.", choices=lambda: STRATEGIES)
    mode: str = opt(
        "correct",
        "correct: a person labels whole sentences; spans: one proposed span at a time (partial labels).",
        choices=MODES,
    )
    size: int = opt(25, "Sentences in the batch (spans mode: spans, one per sentence).")
    per_type_cap: int | None = opt(None, "At most this many of a batch's items per predicted type (default: size/2).")
    seed: int = opt(1, "Seed of the random strategy.")
    min_words: int = opt(3, "Leave out sentences shorter than this.")
    max_words: int = opt(60, "Leave out sentences longer than this (too long to label at a glance).")
    limit: int | None = opt(None, "Read only the first N sentences of the corpus.")
    max_sentences: int | None = opt(
        5000, "Tag a random sample of this many of the sentences read, drawn anew each batch; 0: all."
    )

    def __post_init__(self):
        _one_of("strategy", self.strategy, tuple(STRATEGIES))
        _one_of("mode", self.mode, MODES)
        for name in ("size", "per_type_cap", "min_words", "max_words", "limit"):
            at_least(name, getattr(self, name), 1)
        at_least("max_sentences", self.max_sentences, 0)
        if self.session is not None:
            check_name(self.session)
        at_least("seed", self.seed, 0)
        at_most("seed", self.seed, MAX_SEED)
        if self.max_words < self.min_words:
            raise XlingError(f"max-words ({self.max_words}) is below min-words ({self.min_words})")

    @property
    def session_name(self) -> str:
        return self.session or check_lang(self.tagger.lang)

    @property
    def cap(self) -> int:
        return self.per_type_cap or max(1, (self.size + 1) // 2)


MAX_ID = 64  # characters of a request's id, a tab's id or a person's name
MAX_COPIES = 20  # altered copies of each answer: more repeats the same few names


@dataclass
class AnnotateOptions:
    session: str = opt(help="The annotation session to label (made by xling select).", argument=1)
    address: Address = opt(
        factory=Address,
        overrides={"token": {"help": "A secret the page's address must carry (required with another --host)."}},
    )
    retrain_every: int | None = opt(
        25, "Retrain the task adapter in the background after this many new answers, then select the next batch."
    )
    retrain: bool = opt(True, "Never retrain; only label.", name="no_retrain", invert=True)
    dev: str | None = opt(
        None, "Labelled dev data for the F1 after each retraining (default: every fifth answered sentence)."
    )
    epochs: int = opt(20, "Epochs of each retraining (with early stopping on dev).")
    augment: int = opt(
        0,
        "Altered copies of each answer a retraining adds: its names swapped for other answered names of the same "
        "type, some words for words of the same tag (Dai and Adel 2020).",
    )
    # tagging is most of a round: 5,000 sentences take about 100 s on 2 cores, 2,000 about 40
    round_sample: int = opt(2000, "Sentences each round tags to choose the next batch from (at most select's sample).")
    adapter: str | None = opt(
        None, "Name of the task adapter trained from the answers (default: ner-SESSION-annotated)."
    )
    annotator: str | None = opt(
        None, "The one person who labels this session (left out, several people may, each under their name)."
    )
    overlap: float = opt(0.0, "Share of sentences two people answer, for their agreement (0.1: one in ten).")
    reviewer: str | None = opt(
        None, "The one person who settles disagreements (left out: anyone named who is not party to one)."
    )
    guidelines: str | None = opt(
        None, "A Markdown file of labelling guidelines, shown on the page (key h); default: xling's for PER, ORG, LOC."
    )
    workspace: str | None = opt(None, WORKSPACE_HELP)
    model: str = opt(DEFAULT_MODEL, MODEL_HELP)

    def __post_init__(self):
        at_least("retrain_every", self.retrain_every, 1)
        at_least("epochs", self.epochs, 1)
        at_least("augment", self.augment, 0)
        at_most("augment", self.augment, MAX_COPIES)
        at_least("round_sample", self.round_sample, 1)
        for name in (self.session, self.adapter):
            if name is not None:
                check_name(name)
        if not 0 <= self.overlap <= 1:
            raise XlingError(f"overlap must be from 0 to 1, not {self.overlap}")
        for name in (self.annotator, self.reviewer):
            if name is not None and not (name.strip() and len(name) <= MAX_ID and name.isprintable()):
                raise XlingError(f"a person's name is printable text of at most {MAX_ID} characters, not {shown(name)}")
        if self.annotator and self.reviewer:
            raise XlingError("--annotator names a one-person session, which has nothing to review: give one")
        if self.annotator and self.overlap:
            raise XlingError(
                "--annotator names a one-person session; with --overlap several people answer: leave it out"
            )
