"""`xling export`: an adapter in another library's layout (`adapterhub`, `peft`), or a whole tagger as an ONNX
graph (`onnx`), from one options dataclass that the command line and Python share."""

from __future__ import annotations

import importlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from xling.adapters.files import CONFIG_FILE
from xling.errors import XlingError
from xling.given_data import LabelledData
from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.options import opt
from xling.paths import WORKSPACE_HELP
from xling.roles import TASK_FILE
from xling.tagging.spec import TaggerSpec
from xling.workspace import LANG_ADAPTER_HELP, Workspace


@dataclass(frozen=True)
class Layout:
    """A layout of an adapter (or a whole tagger) outside xling's own folders: what `xling export --format NAME`
    writes and `xling push --format NAME` uploads, and the module that does both (`xling.layouts`)."""

    exported: str | None  # what `export` writes in it (None: nothing to export, xling's own folder)
    pushed: str  # what `push` uploads in it
    module: str  # `xling.layouts.<module>`: its `export` and `push_folder`
    whole_tagger: bool = False  # a tagger, Stack(LANG, ADAPTER), rather than one adapter: takes --lang and the rest

    def functions(self):
        return importlib.import_module(f"xling.layouts.{self.module}")


# every layout, registered once: `export` and `push` take their choices, help and behaviour from here
LAYOUTS = {
    "xling": Layout(None, "xling's own files (hf:ORG/NAME in xling)", "own"),
    "adapterhub": Layout(
        "an adapter for the AdapterHub adapters library (model.load_adapter(TARGET))",
        'the layout the adapters library\'s load_adapter("ORG/NAME") reads (xling reads it too)',
        "adapterhub",
    ),
    "peft": Layout(
        "a LoRA task adapter for Hugging Face PEFT (AutoPeftModelForTokenClassification.from_pretrained)",
        "a LoRA task adapter as PEFT saves one (AutoPeftModelForTokenClassification; xling reads it too)",
        "peft",
    ),
    "onnx": Layout(
        "the tagger Stack(LANG, ADAPTER) as one ONNX graph for ONNX Runtime (xling tag --runtime onnx -t TARGET)",
        "a folder `xling export --format onnx` wrote, as it is (xling tag --runtime onnx -t hf:ORG/NAME)",
        "onnx",
        whole_tagger=True,
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
        taggers = " or ".join(name for name, layout in LAYOUTS.items() if layout.whole_tagger)
        if not LAYOUTS[self.format].whole_tagger and given:
            raise XlingError(f"--{given[0].replace('_', '-')} is an option of --format {taggers} only")
        if LAYOUTS[self.format].whole_tagger and not self.tagger.lang:
            raise XlingError(f"--format {self.format} needs --lang: the language of the text the tagger will read")


def export(options: ExportOptions) -> str:
    """Write the export; returns how to load it."""
    options.check()
    workspace = Workspace(options.tagger.workspace, options.tagger.model)
    return LAYOUTS[options.format].functions().export(options, workspace)


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

    with tempfile.TemporaryDirectory() as staging:
        folder, written = LAYOUTS[options.format].functions().push_folder(options, Path(staging))
        return upload(folder, written=written, repo_id=options.repo_id, private=options.private, token=options.token)


def saved_adapter(options: PushOptions) -> Path:
    """The adapter folder a push names, refused in one line unless xling saved it."""
    directory = Workspace(options.workspace, options.model).adapter(options.adapter)
    if not (directory / CONFIG_FILE).is_file() and not (directory / TASK_FILE).is_file():
        raise XlingError(f"{directory} is not an adapter xling saved (no {CONFIG_FILE} or {TASK_FILE})")
    return directory
