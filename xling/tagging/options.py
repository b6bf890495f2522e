"""The options of `xling tag`, `xling serve` and `xling evaluate`: one dataclass each that the command line, recipes and the
Python API share, the tagger's own nested as a `TaggerSpec` (no torch: `--help` reads them)."""

from __future__ import annotations

from dataclasses import dataclass

from xling.data.labels import parse_label_map
from xling.data.schemes import SCHEME_HELP, SCHEMES, check_scheme
from xling.data.text import MAX_LINE_CHARS
from xling.errors import XlingError
from xling.given_data import LabelledData
from xling.options import MAX_BATCH, MAX_SAMPLES, at_least, at_most, comma_list, opt
from xling.tagging.spec import TaggerSpec
from xling.web import Address

FORMATS = ("pretty", "jsonl", "conll", "html")


@dataclass
class TagOptions:
    input: str = opt(
        help=f"Text file to tag, or - for standard input (a line over {MAX_LINE_CHARS:,} characters is tagged in "
        "pieces cut at spaces, and comes back as one result).",
        argument=1,
    )
    tagger: TaggerSpec = opt(factory=TaggerSpec)
    format: str | None = opt(
        None,
        f"{', '.join(FORMATS)} (default: the --output file's extension if it is one of these, else pretty).",
        choices=FORMATS,
    )
    output: str | None = opt(None, "Write here instead of standard output (written whole, or not at all).")
    paragraphs: bool = opt(False, "Lines are running text: split them into sentences first.")
    conll: bool = opt(
        False,
        "Input is pre-tokenised CoNLL: a token first on each line, blank lines between sentences, -DOCSTART- "
        "skipped; -f conll writes each line's columns back with the predicted tag last.",
    )
    jsonl: bool = opt(
        False, 'Input is JSON lines, {"id": ..., "text": ...}: the id and any other keys come back with each result.'
    )

    def output_file(self) -> str | None:
        """The file to write (None: standard output)."""
        return self.output

    def output_format(self) -> str:
        """`format`, else the output file's extension where it names a format, else pretty."""
        extension = self.output.rsplit(".", 1)[-1] if self.output and "." in self.output else ""
        return self.format or (extension if extension in FORMATS else "pretty")

    def __post_init__(self):
        if self.format is not None and self.format not in FORMATS:
            raise XlingError(f"format must be one of {', '.join(FORMATS)}, not {self.format!r}")
        if self.conll and self.jsonl:
            raise XlingError("--conll and --jsonl: give one input format")


@dataclass
class ServeOptions:
    tagger: TaggerSpec = opt(factory=TaggerSpec)
    address: Address = opt(factory=lambda: Address(port=8322))
    max_batch: int = opt(64, "Texts tagged in one model call at most: concurrent requests' texts go in together.")
    wait_ms: float = opt(
        20.0, "Milliseconds to wait for more requests after one, while several clients are sending (0: never)."
    )

    def __post_init__(self):
        at_least("max_batch", self.max_batch, 1)
        at_most("max_batch", self.max_batch, MAX_BATCH)
        if not 0 <= self.wait_ms <= 1000:
            raise XlingError(f"wait-ms must be from 0 to 1000, not {self.wait_ms}")


@dataclass
class EvaluationOptions:
    data: LabelledData = opt(
        help="Labelled data: a CoNLL file, corpus:NAME/SPLIT, wikiann:LANG or hf:DATASET[:CONFIG[:SPLIT]].", argument=2
    )
    tagger: TaggerSpec = opt(
        factory=lambda: TaggerSpec(batch_size=64),
        overrides={
            "task": {"argument": 1, "help": "The task: ner."},
            "lang": {"help": "Language of the data: its language adapter is stacked under the task adapter."},
            "task_adapter": {
                "help": "Trained task: a name, a directory or hf:ORG/NAME (default: ner-LANG if trained, else ner-en)."
            },
            "fusion": {"help": "A trained fusion to evaluate instead of a single task adapter."},
            "no_lang_adapter": {"help": "Evaluate the task adapter without any language adapter."},
        },
    )
    drop_labels: list[str] = opt(
        factory=list, help="Entity types to turn into O in the gold data, e.g. MISC.", parse=comma_list
    )
    label_map: dict[str, str] = opt(
        factory=dict, help="Rename entity types in the gold data, e.g. PERSON=PER.", parse=parse_label_map
    )
    limit: int | None = opt(None, "Score the first N sentences only.")
    bootstrap: int = opt(
        0, "Resample the sentences N times for a 95% interval of F1 (1000 is usual; 0: none). The model runs once."
    )
    scheme: str = opt("auto", SCHEME_HELP, choices=SCHEMES)

    def __post_init__(self):
        check_scheme(self.scheme)
        at_least("limit", self.limit, 1)
        at_least("bootstrap", self.bootstrap, 0)
        at_most("bootstrap", self.bootstrap, MAX_SAMPLES)


@dataclass
class CompareOptions:
    a: str = opt(help="A result of xling evaluate --bootstrap N --json.", argument=1)
    b: str = opt(help="Another, on the same sentences.", argument=2)
    samples: int = opt(1000, "Bootstrap resamplings of the sentences.")

    def __post_init__(self):
        at_least("samples", self.samples, 100)
        at_most("samples", self.samples, MAX_SAMPLES)
