"""`xling export`: an adapter in another library's layout (`adapterhub`, `peft`), or a whole tagger as an ONNX
graph (`onnx`), from one options dataclass that the command line and Python share."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from xling.adapters.files import CONFIG_FILE
from xling.errors import XlingError
from xling.given_data import LabelledData
from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.names import is_hub_name, is_path
from xling.options import opt
from xling.paths import WORKSPACE_HELP
from xling.roles import FUSION, TASK_FILE, task_record
from xling.tagging.spec import TaggerSpec
from xling.workspace import LANG_ADAPTER_HELP, Workspace


@dataclass(frozen=True)
class Layout:
    """A layout of an adapter (or a whole tagger) outside xling's own folders: what `xling export --format NAME`
    writes and `xling push --format NAME` uploads."""

    exported: str | None  # what `export` writes in it (None: nothing to export, xling's own folder)
    pushed: str  # what `push` uploads in it


# every layout, registered once: `export` and `push` take their choices and help from here
LAYOUTS = {
    "xling": Layout(None, "xling's own files (hf:ORG/NAME in xling)"),
    "adapterhub": Layout(
        "an adapter for the AdapterHub adapters library (model.load_adapter(TARGET))",
        'the layout the adapters library\'s load_adapter("ORG/NAME") reads (xling reads it too)',
    ),
    "peft": Layout(
        "a LoRA task adapter for Hugging Face PEFT (AutoPeftModelForTokenClassification.from_pretrained)",
        "a LoRA task adapter as PEFT saves one (AutoPeftModelForTokenClassification; xling reads it too)",
    ),
    "onnx": Layout(
        "the tagger Stack(LANG, ADAPTER) as one ONNX graph for ONNX Runtime (xling tag --runtime onnx -t TARGET)",
        "a folder `xling export --format onnx` wrote, as it is (xling tag --runtime onnx -t hf:ORG/NAME)",
    ),
}
FORMATS = tuple(name for name, layout in LAYOUTS.items() if layout.exported)


@dataclass
class ExportOptions:
    adapter: str = opt(
        help="A trained adapter: a workspace name or a directory (onnx: the task adapter or fusion).", argument=1
    )
    target: str = opt(help="The directory to write (written whole, or not at all).", argument=2)
    format: str = opt(help="; ".join(f"{name}: {LAYOUTS[name].exported}" for name in FORMATS) + ".", choices=FORMATS)
    overwrite: bool = opt(False, "Replace a directory an earlier export wrote.")
    int8: bool = opt(
        False,
        "onnx: also write the int8 graph (dynamic quantisation, 7-bit weights with a scale per output channel; "
        "a feed-forward output projection whose input carries massive activations stays fp32).",
    )
    check_data: LabelledData | None = opt(
        None, "onnx: labelled data to check the graphs on, with F1 (default: a few built-in sentences)."
    )
    # onnx: the tagger that is exported; its task adapter or fusion is `adapter`, and it is exported in fp32
    tagger: TaggerSpec = opt(
        factory=TaggerSpec,
        without=(
            "task",
            "task_adapter",
            "fusion",
            "ensemble",
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
    if options.format == "onnx":
        return export_onnx_tagger(options, workspace)
    target = Path(options.target)
    write_layout(options.format, workspace.adapter(options.adapter), target, overwrite=options.overwrite)
    if options.format == "adapterhub":
        return f"model.load_adapter({str(target)!r})"
    return f"AutoPeftModelForTokenClassification.from_pretrained({str(target)!r}, id2label=...) (its README.md)"


def write_layout(
    layout: str, directory: Path, target: Path, repo_id: str | None = None, overwrite: bool = False
) -> None:
    """Adapter `directory` written at `target` in another library's layout (adapterhub, peft) with that layout's
    card (naming `repo_id` where it is pushed there), and a task's `task.json` beside (the library ignores it;
    xling reads the folder back as the task it is)."""
    from xling.train.cards.common import CARD_FILE
    from xling.train.report import read_report

    report, task = read_report(directory), task_record(directory)
    if layout == "adapterhub":
        from xling.adapters.adapterhub import export_adapterhub
        from xling.train.cards.adapter import model_card

        card = model_card(report, repo_id, "adapterhub")
        export_adapterhub(directory, target, overwrite=overwrite, extra_files={CARD_FILE: card} | task)
    else:
        from xling.adapters.lora.peft import export_peft
        from xling.train.cards.peft import peft_card

        export_peft(directory, target, overwrite=overwrite, extra_files={CARD_FILE: peft_card(report, repo_id)} | task)


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


@dataclass
class PushOptions:
    adapter: str = opt(
        help="A trained adapter, task or fusion: a workspace name or a directory (onnx: an exported folder).",
        argument=1,
    )
    repo_id: str = opt(help="The Hub model repository, ORG/NAME (created if new).", argument=2)
    private: bool = opt(False, "Create the repository private.")
    token: str | None = opt(None, "Hub token (default: HF_TOKEN, else the one `hf auth login` saved).")
    format: str = opt(
        "xling", "; ".join(f"{name}: {layout.pushed}" for name, layout in LAYOUTS.items()) + ".", choices=tuple(LAYOUTS)
    )
    model: str = opt(DEFAULT_MODEL, MODEL_HELP)
    workspace: str | None = opt(None, WORKSPACE_HELP)


def push(options: PushOptions) -> str:
    """Upload the adapter (or ONNX folder) to the Hub repository in the layout asked for, its card naming the
    repository; returns the commit's URL."""
    from xling.hub import upload
    from xling.train.cards.common import CARD_FILE

    where = {"repo_id": options.repo_id, "private": options.private, "token": options.token}
    if options.format == "onnx":
        from xling.tagging.onnx_tagger import OnnxConfig, is_onnx_folder
        from xling.train.cards.onnx import onnx_card

        folder = Path(options.adapter)
        if not is_onnx_folder(folder):
            raise XlingError(
                f"{folder} is not an ONNX folder; write one with: xling export ADAPTER {folder} --format onnx --lang LANG"
            )
        return upload(folder, written={CARD_FILE: onnx_card(OnnxConfig.load(folder), options.repo_id)}, **where)
    directory = Workspace(options.workspace, options.model).adapter(options.adapter)
    if not (directory / CONFIG_FILE).is_file() and not (directory / TASK_FILE).is_file():
        raise XlingError(f"{directory} is not an adapter xling saved (no {CONFIG_FILE} or {TASK_FILE})")
    if options.format == "xling":
        from xling.train.cards.adapter import model_card
        from xling.train.report import read_report

        return upload(directory, written={CARD_FILE: model_card(read_report(directory), options.repo_id)}, **where)
    with tempfile.TemporaryDirectory() as staging:
        staged = Path(staging) / directory.name
        write_layout(options.format, directory, staged, options.repo_id)
        return upload(staged, written={}, **where)  # its card names the repository already
