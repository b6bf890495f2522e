"""The Python API: `Tagger.load(lang="qu", task="ner")`, then `tagger(text)` or `tagger.pipe(texts)`.

Model, workspace and adapters are resolved like the command line; the task adapter as
`Workspace.task_adapter_name` says (the same rule recipes plan with).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from xling import __version__
from xling.adapters import Stack
from xling.adapters.saving import load
from xling.device import check_precision, pick_device, pick_precision, quantize_int8
from xling.errors import XlingError
from xling.models.loading import DEFAULT_MODEL
from xling.tagging.decoding import DEFAULT_DECODER, check_decoder
from xling.tagging.onnx_tagger import (
    GRAPH_VERSION,
    OnnxTagger,
    check_onnx_precision,
    check_runtime,
    export_key,
    is_onnx_folder,
)
from xling.tagging.predict import predict_probabilities
from xling.tagging.texts import TextTagger, check_batch_size
from xling.trained_tasks import load_fusion_model, load_task_model
from xling.workspace import Workspace, check_lang, is_path

if TYPE_CHECKING:
    from xling.tagging.options import EvaluationOptions, TagOptions


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
        self.directories: dict[str, Path] = {}  # the adapters' directories, where `load` found them
        self.decoder = check_decoder(decoder)
        self.precision = check_precision(precision, inference=True)
        check_batch_size(batch_size)
        if precision == "int8":
            quantize_int8(model)

    @classmethod
    def load(
        cls,
        lang: str = "qu",
        task: str = "ner",
        adapter: str | None = None,
        fusion: str | None = None,
        model: str = DEFAULT_MODEL,
        workspace: str | None = None,
        use_lang_adapter: bool = True,
        lang_adapter: str | None = None,
        device: str = "auto",
        batch_size: int = 32,
        decoder: str | None = None,
        precision: str = "auto",
        runtime: str = "torch",
    ) -> Tagger | OnnxTagger:
        """A ready tagger: `Stack(<lang>, <task adapter>)`, or `Stack(<lang>, Fuse(...))` with `fusion`.

        Adapters are workspace names, directories or Hub names (`hf:ORG/NAME`); the language adapter is
        `lang_adapter` if given, else the workspace's adapter for `lang`. `decoder` None: the task adapter's own
        (the one its dev F1 was measured with). `runtime="onnx"`: an `OnnxTagger` of the same adapters (exported
        into the workspace on first use), or of the folder `adapter` if `xling export --format onnx` wrote it."""
        if check_runtime(runtime) == "onnx":
            arguments = {k: v for k, v in locals().items() if k not in ("cls", "runtime")}
            return onnx_tagger(cls, **arguments)
        lang = check_lang(lang)
        check_decoder(decoder)
        check_batch_size(batch_size)
        device = pick_device(device)
        pick_precision(precision, device)  # refused before anything loads
        ws = Workspace(workspace, model)
        directories = {}  # what the tagger was loaded from, for a copy that travels (the spaCy component's)
        if fusion:
            loaded, tokenizer, head, setup = load_fusion_model(model, ws, fusion)
            decoder = decoder or DEFAULT_DECODER
            trained = [ws.task(adapter) for adapter in setup.children]
        else:
            directory = directories["task"] = ws.task(ws.task_adapter_name(task, lang, adapter))
            loaded, tokenizer, record = load_task_model(model, directory)
            head, setup = record.name, (record.name if record.method == "adapter" else None)
            trained = [directory]
            decoder = decoder or check_decoder(record.decoder)
        if setup is not None and use_lang_adapter:
            directories["lang"] = ws.lang_adapter(lang_adapter or lang)
            setup = Stack(load(loaded, directories["lang"], name=f"lang-{lang}", head=False), setup)
        loaded.set_active(setup)
        loaded.to(device)
        loaded.eval()
        tagger = cls(loaded, tokenizer, head, setup, batch_size, decoder, precision)
        tagger.directories = directories
        tagger.trained_from = trained  # the task folders whose fingerprints say what it was trained on
        return tagger

    @classmethod
    def from_options(cls, options: TagOptions | EvaluationOptions) -> Tagger:
        """The tagger a command's options describe (`xling tag` and `evaluate`, their recipe steps, and any
        command's options with the same names, such as `select`'s); an option it lacks takes `load`'s default."""
        return cls.load(
            lang=options.lang,
            task=getattr(options, "task", "ner"),
            adapter=options.task_adapter,
            fusion=getattr(options, "fusion", None),
            model=options.model,
            workspace=options.workspace,
            use_lang_adapter=getattr(options, "use_lang_adapter", True),
            lang_adapter=options.lang_adapter,
            device=getattr(options, "device", "auto"),
            batch_size=options.batch_size,
            decoder=options.decoder,
            precision=options.precision,
            runtime=getattr(options, "runtime", "torch"),
        )

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


def onnx_tagger(cls, **arguments) -> OnnxTagger:
    """`Tagger.load(**arguments, runtime="onnx")`: an exported folder as it is, else the adapters' export in the
    workspace's cache (`<model>/onnx/<key>`, fp32 and int8), made on first use from the PyTorch tagger."""
    precision = check_onnx_precision(arguments["precision"])
    where = {"batch_size": arguments["batch_size"], "decoder": arguments["decoder"], "device": arguments["device"]}
    if arguments["adapter"] and is_path(arguments["adapter"]) and is_onnx_folder(arguments["adapter"]):
        return OnnxTagger(arguments["adapter"], precision, **where)  # a bare name means the workspace
    ws = Workspace(arguments["workspace"], arguments["model"])
    lang, fusion = check_lang(arguments["lang"]), arguments["fusion"]
    if fusion:
        sources = [ws.fusion(fusion), ws.model_dir / "task"]
    else:
        sources = [ws.task(ws.task_adapter_name(arguments["task"], lang, arguments["adapter"]))]
    if arguments["use_lang_adapter"]:
        try:
            sources.append(ws.lang_adapter(arguments["lang_adapter"] or lang))
        except XlingError:
            pass  # a fully fine-tuned task takes none; where one is needed, loading for the export says so
    settings = {k: arguments[k] for k in ("model", "lang", "task", "adapter", "fusion", "use_lang_adapter")}
    folder = ws.model_dir / "onnx" / export_key(sources, settings | {"xling": __version__, "graph": GRAPH_VERSION})
    if not is_onnx_folder(folder):
        from xling.tagging.onnx_export import export_onnx

        source = cls.load(**(arguments | {"device": "cpu", "precision": "fp32", "decoder": None}))
        export_onnx(source, folder, int8=True, overwrite=True, describe=settings)
    return OnnxTagger(folder, precision, **where)
