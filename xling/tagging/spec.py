"""`TaggerSpec`: what a tagger is made of and how it runs. Every command that tags (tag, evaluate, select,
analyze) nests it as its `tagger` options, and `Tagger.load(spec)` builds it (no torch here: `--help` reads it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xling.data.decoding import SAVED_DECODER_HELP, check_decoder
from xling.data.labels import TASKS
from xling.device import DEVICE_HELP, INFERENCE_PRECISION_HELP, check_device, check_precision
from xling.errors import XlingError
from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.names import check_lang, is_hub_name
from xling.options import MAX_BATCH, at_least, at_most, comma_list, opt
from xling.paths import WORKSPACE_HELP
from xling.roles import FUSION, TASK, Role
from xling.tagging.onnx_tagger import RUNTIME_HELP, check_onnx_precision, check_runtime
from xling.workspace import LANG_ADAPTER_HELP, Workspace


@dataclass
class TaggerSpec:
    lang: str | None = opt(
        None, "Language of the text: its language adapter goes under the task adapter.", required=True
    )
    task: str = opt("ner", "The task.", choices=TASKS)
    task_adapter: str | None = opt(
        None, "Task adapter: a name, a directory or hf:ORG/NAME (default: TASK-LANG if trained, else TASK-en)."
    )
    fusion: str | None = opt(None, "A trained fusion to use instead of a single task adapter.")
    ensemble: list[str] = opt(
        factory=list,
        help="More task adapters, comma-separated, whose word probabilities are averaged with the task adapter's "
        "before decoding, each in its own setup (e.g. ner-es beside ner-en).",
        parse=comma_list,
    )
    use_lang_adapter: bool = opt(True, "Tag without a language adapter.", name="no_lang_adapter", invert=True)
    lang_adapter: str | None = opt(None, LANG_ADAPTER_HELP)
    model: str = opt(DEFAULT_MODEL, MODEL_HELP)
    workspace: str | None = opt(None, WORKSPACE_HELP)
    batch_size: int = opt(32, "Sentences per model batch.")
    decoder: str | None = opt(None, SAVED_DECODER_HELP)
    device: str = opt("auto", DEVICE_HELP)
    precision: str = opt("auto", INFERENCE_PRECISION_HELP)
    runtime: str = opt("torch", RUNTIME_HELP)

    def __post_init__(self):
        if self.lang is not None:  # unset in `defaults`' instance; required where the spec is an option
            self.lang = check_lang(self.lang)
        check_decoder(self.decoder)
        check_device(self.device)
        check_precision(self.precision, inference=True)
        if check_runtime(self.runtime) == "onnx":
            check_onnx_precision(self.precision)
        at_least("batch_size", self.batch_size, 1)
        at_most("batch_size", self.batch_size, MAX_BATCH)
        if not self.use_lang_adapter and self.lang_adapter:
            raise XlingError(
                f"--no-lang-adapter and --lang-adapter {self.lang_adapter} contradict each other; give one"
            )
        if self.fusion and self.ensemble:
            raise XlingError(f"--fusion {self.fusion} and --ensemble contradict each other: give one")
        if self.task_adapter in self.ensemble or len(set(self.ensemble)) < len(self.ensemble):
            raise XlingError(f"--ensemble names a task adapter twice: {', '.join(self.ensemble)}")
        if self.fusion and self.task_adapter:
            raise XlingError(
                f"--fusion {self.fusion} and --task-adapter {self.task_adapter} contradict each other: a fusion "
                "combines its own task adapters; give one"
            )

    def check_now(self) -> None:
        """Refuse an adapter that this workspace does not hold, before anything loads. Not in `__post_init__`: a
        recipe reads its steps' options before its earlier steps train what they name. Hub names are fetched (and
        checked) when they load; the language adapter a task takes by default, when it is known to need one."""
        ws = Workspace(self.workspace, self.model)
        if self.fusion or self.lang is not None or self.task_adapter:
            self.top_adapter(ws, fetch=False)
        if self.use_lang_adapter and self.lang_adapter:
            self.lang_adapter_dir(ws, fetch=False)

    def top_adapter(self, ws: Workspace, fetch: bool = True) -> tuple[Role, Path | None]:
        """The fusion the spec names, else its task adapter (named, or the workspace's choice for `lang`), with its
        directory: a Hub name's is None unless `fetch`."""
        if self.fusion:
            role, name = FUSION, self.fusion
        else:
            role, name = TASK, ws.task_adapter_name(self.task, self.lang, self.task_adapter)
        if is_hub_name(name) and not fetch:
            return role, None
        return role, (ws.fusion if role is FUSION else ws.task)(name)

    def stacks_lang_adapter(self, role: Role, adapter: str, trained_over_one: bool) -> bool:
        """Whether a language adapter goes under `adapter` (a task adapter or fusion), whose record says whether it
        was trained over one. Only where both this spec and the training had one: an adapter trained alone never
        meets a language adapter it has not seen. The one rule of tag, evaluate, serve, spaCy and the ONNX export."""
        if not trained_over_one and self.use_lang_adapter and self.lang_adapter:
            raise XlingError(
                f"{role.title} {adapter} was trained without a language adapter; tag with it without "
                f"--lang-adapter {self.lang_adapter}"
            )
        return self.use_lang_adapter and trained_over_one

    def lang_adapter_dir(self, ws: Workspace, under: Path | None = None, fetch: bool = True) -> Path | None:
        """The language adapter's directory: `lang_adapter`, else `lang`'s (`under` a shipped task adapter, the
        shipped one); a Hub name's is None unless `fetch`."""
        name = self.lang_adapter or self.lang
        return None if is_hub_name(name) and not fetch else ws.lang_adapter(name, under=under)
