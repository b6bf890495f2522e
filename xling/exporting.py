"""`xling export`: an adapter in another library's layout (`adapterhub`, `peft`), or a whole tagger as an ONNX
graph (`onnx`), from one options dataclass that the command line and Python share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xling.errors import XlingError
from xling.names import is_hub_name, is_path
from xling.options import opt
from xling.roles import FUSION, task_record
from xling.tagging.spec import TaggerSpec
from xling.workspace import LANG_ADAPTER_HELP, Workspace

FORMATS = ("adapterhub", "peft", "onnx")


@dataclass
class ExportOptions:
    adapter: str = opt(
        help="A trained adapter: a workspace name or a directory (onnx: the task adapter or fusion).", argument=1
    )
    target: str = opt(help="The directory to write (written whole, or not at all).", argument=2)
    format: str = opt(
        help="adapterhub: an adapter for the AdapterHub adapters library; peft: a LoRA task adapter for Hugging "
        "Face PEFT (AutoPeftModelForTokenClassification.from_pretrained); onnx: the tagger Stack(LANG, ADAPTER) as one ONNX graph for ONNX "
        "Runtime (xling tag --runtime onnx -t TARGET).",
        choices=FORMATS,
    )
    overwrite: bool = opt(False, "Replace a directory an earlier export wrote.")
    int8: bool = opt(
        False,
        "onnx: also write the int8 graph (dynamic quantisation, 7-bit weights with a scale per output channel; "
        "a feed-forward output projection whose input carries massive activations stays fp32).",
    )
    check_data: str | None = opt(
        None, "onnx: labelled data to check the graphs on, with F1 (default: a few built-in sentences)."
    )
    # onnx: the tagger that is exported; its task adapter or fusion is `adapter`, and it is exported in fp32
    tagger: TaggerSpec = opt(
        factory=TaggerSpec,
        without=(
            "task",
            "task_adapter",
            "fusion",
            "no_lang_adapter",
            "batch_size",
            "decoder",
            "device",
            "precision",
            "runtime",
        ),
        overrides={
            "lang": {"required": False, "help": "onnx: the language whose adapter goes under the task adapter."},
            "lang_adapter": {"help": "onnx: " + LANG_ADAPTER_HELP},
        },
    )

    def __post_init__(self):
        if self.format is not None and self.format not in FORMATS:  # None: `defaults`' instance
            raise XlingError(f"format must be one of {', '.join(FORMATS)}, not {self.format!r}")

    def check(self) -> None:
        """What the options say together (each alone is checked on construction)."""
        onnx_only = {
            "lang": self.tagger.lang,
            "lang_adapter": self.tagger.lang_adapter,
            "check_data": self.check_data,
            "int8": self.int8,
        }
        given = [name for name, value in onnx_only.items() if value]
        if self.format in ("adapterhub", "peft") and given:
            raise XlingError(f"--{given[0].replace('_', '-')} is an option of --format onnx only")
        if self.format == "onnx" and not self.tagger.lang:
            raise XlingError("--format onnx needs --lang: the language of the text the tagger will read")


def export(options: ExportOptions) -> str:
    """Write the export; returns how to load it."""
    options.check()
    workspace = Workspace(options.tagger.workspace, options.tagger.model)
    target = Path(options.target)
    if options.format == "adapterhub":
        from xling.adapters.adapterhub import export_adapterhub
        from xling.cards.adapter import model_card
        from xling.cards.common import CARD_FILE
        from xling.reports import read_report

        directory = workspace.adapter(options.adapter)
        card = model_card(read_report(directory))
        export_adapterhub(directory, target, overwrite=options.overwrite, extra_files={CARD_FILE: card})
        return f"model.load_adapter({str(target)!r})"
    if options.format == "peft":
        from xling.adapters.lora.peft import export_peft
        from xling.cards.common import CARD_FILE
        from xling.cards.peft import peft_card
        from xling.reports import read_report

        directory = workspace.adapter(options.adapter)
        extra = {CARD_FILE: peft_card(read_report(directory))} | task_record(directory)
        export_peft(directory, target, overwrite=options.overwrite, extra_files=extra)
        return f"AutoPeftModelForTokenClassification.from_pretrained({str(target)!r}, id2label=...) (its README.md)"
    return export_onnx_tagger(options, workspace)


def export_onnx_tagger(options: ExportOptions, workspace: Workspace) -> str:
    from xling.tagging.onnx_export import export_onnx
    from xling.tagging.tagger import Tagger

    lang = options.tagger.lang
    named = not (is_path(options.adapter) or is_hub_name(options.adapter))  # a directory or Hub name: a task adapter
    fusion = options.adapter if named and workspace.adapter_dir(FUSION, options.adapter).is_dir() else None
    tagger = Tagger.load(
        options.tagger, task_adapter=None if fusion else options.adapter, fusion=fusion, precision="fp32"
    )
    check = None
    if options.check_data:
        from xling.data.sources import load_ner

        sentences = load_ner(options.check_data, "validation")
        check = ([s.tokens for s in sentences], [s.tags for s in sentences])
    describe = {"model": options.tagger.model, "lang": lang, "adapter": options.adapter, "fusion": bool(fusion)}
    export_onnx(
        tagger, Path(options.target), int8=options.int8, check=check, overwrite=options.overwrite, describe=describe
    )
    return f"xling tag --runtime onnx --task-adapter {options.target} --lang {lang} FILE"
