"""The options of `xling tag` and `xling evaluate`: one dataclass each that the command line, recipes and
`Tagger.from_options` share (no torch: `--help` reads them)."""

from __future__ import annotations

from dataclasses import dataclass

from xling.data.labels import TASKS, parse_label_map
from xling.data.text import MAX_LINE_CHARS
from xling.device import DEVICE_HELP, INFERENCE_PRECISION_HELP, check_device, check_precision
from xling.errors import XlingError
from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.options import at_least, comma_list, opt
from xling.paths import WORKSPACE_HELP
from xling.tagging.decoding import SAVED_DECODER_HELP, check_decoder
from xling.tagging.onnx_tagger import RUNTIME_HELP, check_onnx_precision, check_runtime
from xling.workspace import LANG_ADAPTER_HELP

FORMATS = ("pretty", "jsonl", "conll", "html")


@dataclass
class TagOptions:
    input: str = opt(
        help=f"Text file to tag, or - for standard input (a line over {MAX_LINE_CHARS:,} characters is tagged in "
        "pieces cut at spaces, one result each).",
        argument=1,
    )
    lang: str = opt(help="Language of the text: its language adapter goes under the task adapter.")
    task: str = opt("ner", "The task.")
    task_adapter: str | None = opt(
        None, "Task adapter: a name, a directory or hf:ORG/NAME (default: TASK-LANG if trained, else TASK-en)."
    )
    fusion: str | None = opt(None, "A trained fusion to use instead of a single task adapter.")
    use_lang_adapter: bool = opt(True, "Tag without a language adapter.", name="no_lang_adapter", invert=True)
    lang_adapter: str | None = opt(None, LANG_ADAPTER_HELP)
    model: str = opt(DEFAULT_MODEL, MODEL_HELP)
    workspace: str | None = opt(None, WORKSPACE_HELP)
    format: str | None = opt(
        None,
        f"{', '.join(FORMATS)} (default: the --output file's extension if it is one of these, else pretty).",
        choices=FORMATS,
    )
    output: str | None = opt(None, "Write here instead of standard output (written whole, or not at all).")
    paragraphs: bool = opt(False, "Lines are running text: split them into sentences first.")
    conll: bool = opt(False, "Input is pre-tokenised: a token per line, blank lines between sentences.")
    batch_size: int = opt(32, "Sentences per model batch.")
    decoder: str | None = opt(None, SAVED_DECODER_HELP)
    device: str = opt("auto", DEVICE_HELP)
    precision: str = opt("auto", INFERENCE_PRECISION_HELP)
    runtime: str = opt("torch", RUNTIME_HELP)

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
        check_runtime_precision(self.runtime, self.precision)
        check_decoder(self.decoder)
        check_precision(self.precision, inference=True)
        at_least("batch_size", self.batch_size, 1)


def check_runtime_precision(runtime: str, precision: str) -> None:
    if check_runtime(runtime) == "onnx":
        check_onnx_precision(precision)


@dataclass
class EvaluationOptions:
    data: str = opt(
        help="Labelled data: a CoNLL file, corpus:NAME/SPLIT, wikiann:LANG or hf:DATASET[:CONFIG[:SPLIT]].", argument=2
    )
    lang: str = opt(help="Language of the data: its language adapter is stacked under the task adapter.")
    task_adapter: str | None = opt(
        None, "Trained task: a name, a directory or hf:ORG/NAME (default: ner-LANG if trained, else ner-en)."
    )
    fusion: str | None = opt(None, "A trained fusion to evaluate instead of a single task adapter.")
    model: str = opt(DEFAULT_MODEL, MODEL_HELP)
    workspace: str | None = opt(None, WORKSPACE_HELP)
    use_lang_adapter: bool = opt(
        True, "Evaluate the task adapter without any language adapter.", name="no_lang_adapter", invert=True
    )
    lang_adapter: str | None = opt(None, LANG_ADAPTER_HELP)
    drop_labels: list[str] = opt(
        factory=list, help="Entity types to turn into O in the gold data, e.g. MISC.", parse=comma_list
    )
    label_map: dict[str, str] = opt(
        factory=dict, help="Rename entity types in the gold data, e.g. PERSON=PER.", parse=parse_label_map
    )
    batch_size: int = opt(64, "Sentences per batch.")
    limit: int | None = opt(None, "Score the first N sentences only.")
    decoder: str | None = opt(None, SAVED_DECODER_HELP)
    device: str = opt("auto", DEVICE_HELP)
    precision: str = opt("auto", INFERENCE_PRECISION_HELP)
    runtime: str = opt("torch", RUNTIME_HELP)
    bootstrap: int = opt(
        0, "Resample the sentences N times for a 95% interval of F1 (1000 is usual; 0: none). The model runs once."
    )
    task: str = opt("ner", "The task: ner.", argument=1, choices=TASKS)

    def __post_init__(self):
        check_runtime_precision(self.runtime, self.precision)
        check_decoder(self.decoder)
        check_device(self.device)
        check_precision(self.precision, inference=True)
        at_least("limit", self.limit, 1)
        at_least("batch_size", self.batch_size, 1)
        at_least("bootstrap", self.bootstrap, 0)
