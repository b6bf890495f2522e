"""The Python API: `Tagger.load(lang="qu", task="ner")` (or `Tagger.load(spec)`, a `TaggerSpec`), then
`tagger(text)` or `tagger.pipe(texts)`.

Model, workspace and adapters are resolved like the command line; the task adapter as
`Workspace.task_adapter_name` says (the same rule recipes plan with).
"""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from xling import __version__
from xling.adapters import Stack
from xling.adapters.composition import lang_adapter_name
from xling.adapters.saving import load
from xling.data.decoding import DEFAULT_DECODER, check_decoder
from xling.device import bound_kernel_cache, check_precision, pick_device, pick_precision
from xling.errors import XlingError
from xling.methods import METHODS
from xling.models.stored_weights import quantize_int8
from xling.pretrained import say_notice
from xling.roles import FUSION, LANG, TASK, AdapterFolders, Role
from xling.tagging.base import TextTagger, check_batch_size
from xling.tagging.ensemble import EnsembleTagger, ensemble_tagger
from xling.tagging.onnx_tagger import (
    GRAPH_VERSION,
    ExportedFrom,
    OnnxTagger,
    export_key,
    exported_tagger,
    is_onnx_folder,
)
from xling.tagging.predict import predict_probabilities
from xling.tagging.spec import TaggerSpec
from xling.trained_tasks import load_fusion_model, load_task_model, trained_over_lang_adapter
from xling.workspace import Workspace


class Tagger(TextTagger):
    """Tags with the PyTorch model: `Stack(<lang>, <task adapter>)` or a fusion, on a CPU or GPU."""

    runtime = "torch"

    def __init__(
        self,
        model,
        tokenizer,
        head: str,
        setup,
        batch_size: int = 32,
        decoder: str = DEFAULT_DECODER,
        precision: str = "auto",
    ):
        self.model, self.tokenizer, self.head, self.setup, self.batch_size = model, tokenizer, head, setup, batch_size
        self.stored_weights: dict = {}  # the Linear weights in bf16 (fp16), kept from call to call
        self.directories = AdapterFolders()  # where `load` found the adapters
        self.fused: dict[str, Path] = {}  # a fusion's task adapters' directories, by name
        self.decoder = check_decoder(decoder)
        self.precision = check_precision(precision, inference=True)
        check_batch_size(batch_size)
        if precision == "int8":
            quantize_int8(model)

    @classmethod
    def load(cls, spec: TaggerSpec | str | None = None, **settings) -> Tagger | OnnxTagger | EnsembleTagger:
        """A ready tagger: `Stack(<lang>, <task adapter>)`, or `Stack(<lang>, Fuse(...))` with `fusion`, as `spec`
        (or `TaggerSpec(**settings)`: `Tagger.load(lang="qu")`, or `Tagger.load("qu")`; with both, the settings
        change the spec) says.

        Adapters are workspace names, directories or Hub names (`hf:ORG/NAME`); the language adapter is
        `lang_adapter` if given, else the workspace's adapter for `lang`. `decoder` None: the task adapter's own
        (the one its dev F1 was measured with). `runtime="onnx"`: an `OnnxTagger` of the same adapters (exported
        into the workspace on first use), or of the folder `task_adapter` if `xling export --format onnx` wrote it.
        `ensemble`: an `EnsembleTagger` of the task adapter and those, each loaded so."""
        if isinstance(spec, str):
            spec, settings = None, {"lang": spec, **settings}
        spec = replace(spec, **settings) if spec else TaggerSpec(**settings)
        if spec.lang is None:
            raise XlingError("a tagger needs the language of its text (lang)")
        if spec.ensemble:
            return ensemble_tagger(cls.load, spec)
        if spec.runtime == "onnx":
            return onnx_tagger(cls, spec)
        device = pick_device(spec.device)
        if device == "cpu":
            bound_kernel_cache("tagging")
        pick_precision(spec.precision, device)  # refused before anything loads
        ws = Workspace(spec.workspace, spec.model)
        role, directory = spec.top_adapter(ws)
        directories = AdapterFolders(**{role.name: directory})
        if role is FUSION:
            loaded, tokenizer, head, setup = load_fusion_model(spec.model, ws, spec.fusion, inference_only=True)
            decoder = spec.decoder or DEFAULT_DECODER
            fused = {adapter: ws.task(adapter) for adapter in setup.children}
            trained = list(fused.values())
        else:
            loaded, tokenizer, record = load_task_model(spec.model, directory, inference_only=True)
            head, setup = record.name, (record.name if METHODS[record.method].adapters else None)
            trained, fused = [directory], {}
            decoder = spec.decoder or check_decoder(record.decoder)
        stacked = spec.stacks_lang_adapter(role, directory.name, trained_over_lang_adapter(role, directory))
        if setup is not None and stacked:
            directories = replace(directories, lang=spec.lang_adapter_dir(ws, under=directories.task))
            setup = Stack(
                load(loaded, directories.lang, name=lang_adapter_name(spec.lang), head=False, role=LANG), setup
            )
        loaded.set_active(setup)
        loaded.to(device)
        loaded.eval()
        tagger = cls(loaded, tokenizer, head, setup, spec.batch_size, decoder, spec.precision)
        tagger.directories = directories
        tagger.fused = fused
        left_out = setup is not None and spec.use_lang_adapter and not stacked
        zero_shot = role is TASK and not spec.task_adapter and directory.name != f"{spec.task}-{spec.lang}"
        say_notice(directories, chosen_because(spec, ws, role, directory, left_out), zero_shot)
        tagger.trained_from = trained  # the task folders whose fingerprints say what it was trained on
        return tagger

    @property
    def computed_in(self) -> str:
        """fp32, bf16 or fp16: what `precision` picks on the device the model is on now."""
        return pick_precision(self.precision, next(self.model.parameters()).device.type)

    @property
    def labels(self) -> list[str]:
        return self.model.heads[self.head].labels

    def word_probabilities(self, sentences: list[list[str]]) -> list[np.ndarray]:
        return predict_probabilities(
            self.model,
            self.tokenizer,
            sentences,
            self.head,
            self.batch_size,
            precision=self.computed_in,
            stored_weights=self.stored_weights,
        )


def chosen_because(spec: TaggerSpec, ws: Workspace, role: Role, directory: Path, left_out: bool) -> list[str]:
    """What the notice line says of why the tagger is what it is: the task adapter the workspace's rule chose
    where none was named, and a language adapter left out because the task adapter was trained without one."""
    reasons = []
    if role is TASK and not spec.task_adapter and (why := ws.why_chosen(spec.task, spec.lang, directory.name)):
        reasons.append(why)
    if left_out:
        reasons.append(f"{directory.name} was trained without a language adapter, so none goes under it")
    return reasons


def onnx_tagger(cls, spec: TaggerSpec) -> OnnxTagger:
    """`Tagger.load(spec)` with `spec.runtime` onnx: an exported folder as it is, else the adapters' export in the
    workspace's cache (`<model>/onnx/<key>`, fp32 and int8), made on first use from the PyTorch tagger."""
    where = {"batch_size": spec.batch_size, "decoder": spec.decoder, "device": spec.device}
    if (exported := exported_tagger(spec)) is not None:
        return exported
    ws = Workspace(spec.workspace, spec.model)
    role, top = spec.top_adapter(ws)  # as `Tagger.load` decides
    sources = [top, ws.model_dir / "task"] if role is FUSION else [top]
    if spec.stacks_lang_adapter(role, sources[0].name, trained_over_lang_adapter(role, sources[0])):
        try:
            sources.append(ws.lang_adapter(spec.lang_adapter or spec.lang, under=sources[0]))
        except XlingError:
            pass  # a fully fine-tuned task takes none; where one is needed, loading for the export says so
    exported_from = ExportedFrom(
        spec.model, spec.lang, spec.task_adapter, spec.fusion, spec.task, spec.use_lang_adapter
    )  # `adapter`, the task adapter's old name: exports already cached keep their key
    settings = asdict(exported_from) | {"xling": __version__, "graph": GRAPH_VERSION}
    folder = ws.model_dir / "onnx" / export_key(sources, settings)
    if not is_onnx_folder(folder):
        from xling.tagging.onnx_export import export_onnx

        source = cls.load(spec, runtime="torch", device="cpu", precision="fp32", decoder=None)
        export_onnx(source, folder, int8=True, overwrite=True, source=exported_from)
    return OnnxTagger(folder, spec.precision, **where)
