"""Tagging with ONNX Runtime: `OnnxTagger(folder)` on a folder `xling export --format onnx` wrote, or
`Tagger.load(..., runtime="onnx")` / `xling tag --runtime onnx`, which export the adapters into the workspace's
cache on first use. The same words, decoders, outputs and streaming as the PyTorch tagger (`TextTagger`);
an exported folder is all it needs (no workspace, no adapters).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from xling.data.decoding import check_decoder
from xling.data.labels import check_labels
from xling.device import PRECISION_TABLE
from xling.errors import XlingError
from xling.names import is_hub_name, is_path
from xling.paths import cache_dir
from xling.records import read_record
from xling.tagging import align
from xling.tagging.align import Window, padded, predict_windows
from xling.tagging.base import TextTagger, check_batch_size

CONFIG_FILE = "xling_onnx.json"
GRAPH_FILES = {"fp32": "model.onnx", "int8": "model.int8.onnx"}
GRAPH_VERSION = 4  # how xling builds the graph: a cached export of another version is made again
RUNTIMES = ("torch", "onnx")
RUNTIME_HELP = (
    "torch (PyTorch) or onnx (ONNX Runtime, often faster on CPUs: the adapters are exported into the workspace "
    "on first use; --task-adapter may name a folder `xling export --format onnx` wrote)."
)
MAX_WINDOW = 8192  # sub-tokens of one window: no encoder xling supports takes more
MIN_ONNXRUNTIME = (1, 23)  # the first with a CPU kernel for opset 23's Attention
INSTALL_HINT = "ONNX Runtime is not installed; install it with: pip install 'xling[onnx]'"


@dataclass
class ExportedFrom:
    """What an ONNX folder was exported from, as it was named: model, language, adapters."""

    model: str | None = None
    lang: str | None = None
    adapter: str | None = None  # the task adapter (or fusion) named; None: the workspace's rule chose
    fusion: str | bool | None = None  # the fusion's name (`xling export` writes whether ADAPTER is one)
    task: str | None = None
    use_lang_adapter: bool | None = None


@dataclass
class ExportChecks:
    """How the graphs agreed with the PyTorch tagger on the check sentences (nothing measured: an export of an
    xling that did not check)."""

    sentences: int = 0
    fp32_max_logit_difference: float | None = None
    int8_tag_agreement: float | None = None  # words whose tag the int8 graph decodes as PyTorch fp32 does
    f1: dict[str, float] = field(default_factory=dict)  # with labelled check data: per graph (and torch)


@dataclass
class OnnxConfig:
    """`xling_onnx.json`: what the graphs compute and how to read their logits."""

    labels: list[str]
    head: str  # the task adapter's (or fusion's) name
    decoder: str
    max_window: int  # the longest window of sub-tokens (specials included) the graph takes
    pad_token_id: int
    setup: str
    precisions: list[str]
    xling_version: str
    opset: int
    int8_fp32_nodes: list[str] = field(default_factory=list)  # encoder MatMuls the int8 graph keeps fp32
    source: ExportedFrom = field(default_factory=ExportedFrom)
    checks: ExportChecks = field(default_factory=ExportChecks)

    def __post_init__(self):
        check_labels(self.labels)
        if check_decoder(self.decoder) is None:
            raise XlingError("decoder must be set")
        if not 8 <= self.max_window <= MAX_WINDOW:
            raise XlingError(f"max_window must be from 8 to {MAX_WINDOW}, not {self.max_window}")
        if self.pad_token_id < 0:
            raise XlingError(f"pad_token_id must be at least 0, not {self.pad_token_id}")
        if not self.precisions or not set(self.precisions) <= set(GRAPH_FILES):
            raise XlingError(f"precisions must be some of {', '.join(GRAPH_FILES)}, not {self.precisions}")

    @classmethod
    def read(cls, directory: Path) -> OnnxConfig:
        file = directory / CONFIG_FILE
        return read_record(file, cls)


def is_onnx_folder(path: str | Path | None) -> bool:
    return path is not None and (Path(path).expanduser() / CONFIG_FILE).is_file()


def check_runtime(runtime: str) -> str:
    if runtime not in RUNTIMES:
        raise XlingError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    return runtime


def check_onnx_precision(precision: str) -> str:
    """fp32 (`auto` too) or int8: what an ONNX graph is stored in."""
    if precision not in PRECISION_TABLE or not PRECISION_TABLE[precision].onnx:
        stored = " or ".join(name for name, p in PRECISION_TABLE.items() if p.onnx and name != "auto")
        raise XlingError(f"the onnx runtime computes in {stored}, not {precision}")
    return "fp32" if precision == "auto" else precision


def import_onnxruntime():
    """ONNX Runtime, with its telemetry off. Its first import writes a device id under `$XDG_CACHE_HOME` (default
    `~/.cache`) whatever the telemetry switch says, so that import points it into xling's own cache folder."""
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache_dir() / "onnxruntime")
    try:
        import onnxruntime
    except ImportError:
        raise XlingError(INSTALL_HINT) from None
    finally:
        if previous is None:
            os.environ.pop("XDG_CACHE_HOME")
        else:
            os.environ["XDG_CACHE_HOME"] = previous
    if tuple(int(part) for part in onnxruntime.__version__.split(".")[:2]) < MIN_ONNXRUNTIME:
        raise XlingError(
            f"ONNX Runtime {onnxruntime.__version__} cannot run xling's graphs (their Attention operator needs "
            f"{'.'.join(map(str, MIN_ONNXRUNTIME))} or later); upgrade it with: pip install -U 'xling[onnx]'"
        )
    onnxruntime.disable_telemetry_events()
    return onnxruntime


# Graph rewrites a CPU session leaves out: ONNX Runtime's CPU SkipLayerNormalization (a residual Add fused into
# the LayerNorm after it) ran 4-6x slower than the Add and LayerNormalization it replaces; without it the
# embedded default's fp32 and int8 graphs tag about 6% faster. CUDA keeps every fusion.
CPU_SKIPPED_FUSIONS = ["SkipLayerNormFusion"]


def session_for(path: Path, device: str, options=None):
    """An ONNX Runtime session on `path` with every graph optimisation a CPU gains from, on CUDA if asked and
    available; `options`: ONNX Runtime `SessionOptions` to start from."""
    ort = import_onnxruntime()
    options = options or ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads := os.environ.get("OMP_NUM_THREADS"):  # a launcher's share of the cores (torchrun sets it)
        options.intra_op_num_threads = int(threads)
    providers = ["CPUExecutionProvider"]
    if device in ("auto", "cuda") and "CUDAExecutionProvider" in ort.get_available_providers():
        providers.insert(0, "CUDAExecutionProvider")
    elif device == "cuda":
        raise XlingError("--device cuda: this ONNX Runtime has no CUDA provider (pip install onnxruntime-gpu)")
    skipped = CPU_SKIPPED_FUSIONS if providers[0] == "CPUExecutionProvider" else []
    try:
        return ort.InferenceSession(str(path), options, providers=providers, disabled_optimizers=skipped)
    except Exception as err:  # ONNX Runtime's own error types (Fail, InvalidProtobuf, NoSuchFile, ...)
        if not type(err).__module__.startswith("onnxruntime"):
            raise
        raise XlingError(f"{path}: ONNX Runtime cannot load it ({str(err).splitlines()[0][:200]})") from None


def onnx_tokenizer(directory: Path):
    """The export's tokenizer: from `tokenizer.json` alone where it has one (no torch, no Transformers: the ONNX
    route's whole point), else through Transformers."""
    if (directory / "tokenizer.json").is_file() and (directory / "tokenizer_config.json").is_file():
        from xling.models.light.tokenizer import LightTokenizer

        return LightTokenizer(directory)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(directory))


def exported_tagger(spec) -> OnnxTagger | None:
    """The tagger of a `TaggerSpec` whose task adapter is a folder `xling export --format onnx` wrote, or a Hub
    repository `xling push --format onnx` filled (a bare name means the workspace's), run by ONNX Runtime; None
    for any other spec."""
    folder = spec.task_adapter
    if spec.runtime != "onnx" or not folder or not (is_path(folder) or is_hub_name(folder)):
        return None
    if is_hub_name(folder):
        from xling.hub import download

        folder = download(folder)
    if not is_onnx_folder(folder):
        return None
    return OnnxTagger(folder, spec.precision, spec.batch_size, spec.decoder, spec.device)


class OnnxTagger(TextTagger):
    """Tags with an exported graph; `precision` fp32 or int8 picks the graph."""

    runtime = "onnx"

    def __init__(
        self,
        directory: str | Path,
        precision: str = "fp32",
        batch_size: int = 32,
        decoder: str | None = None,
        device: str = "auto",
    ):
        self.directory = Path(directory).expanduser()
        if not is_onnx_folder(self.directory):
            raise XlingError(f"no exported ONNX tagger at {directory} ({CONFIG_FILE} missing)")
        self.config = OnnxConfig.read(self.directory)
        self.precision = check_onnx_precision(precision)
        if self.precision not in self.config.precisions:
            raise XlingError(f"{directory} has no {self.precision} graph; export it with --int8")
        check_batch_size(batch_size)
        self.batch_size, self.decoder = batch_size, check_decoder(decoder) or self.config.decoder
        self.labels, self.head, self.setup = self.config.labels, self.config.head, self.config.setup
        self.session = session_for(self.directory / GRAPH_FILES[self.precision], device)
        width = self.session.get_outputs()[0].shape[-1]
        if width != len(self.labels):
            raise XlingError(f"{self.directory / CONFIG_FILE}: {len(self.labels)} labels, but the graph scores {width}")
        try:
            self.tokenizer = onnx_tokenizer(self.directory)
        except Exception as err:  # tokenizers and transformers raise plain Exceptions for a damaged file
            said = (str(err) or type(err).__name__).splitlines()[0][:200]
            raise XlingError(
                f"{self.directory}: its tokenizer files (tokenizer.json, ...) do not load: {said}"
            ) from None
        self.trained_from = [self.directory]  # the export keeps its tasks' training fingerprints

    @property
    def computed_in(self) -> str:
        return self.precision

    def logits(self, windows: list[Window]) -> np.ndarray:
        """(windows, sub-tokens, labels) logits of windows padded to the longest."""
        ids, mask = padded(windows, self.config.pad_token_id)
        return self.session.run(["logits"], {"input_ids": ids, "attention_mask": mask})[0]

    def word_probabilities(self, sentences: list[list[str]]) -> list[np.ndarray]:
        def run_batch(windows: list[Window]) -> np.ndarray:
            logits = self.logits(windows)
            exp = np.exp(logits - logits.max(-1, keepdims=True))
            return exp / exp.sum(-1, keepdims=True)

        cap = align.CPU_MAX_TOKENS if self.session.get_providers()[0] == "CPUExecutionProvider" else None
        return predict_windows(
            sentences, self.tokenizer, self.labels, run_batch, self.config.max_window, self.batch_size, cap
        )


def export_key(sources: list[Path], settings: dict) -> str:
    """A name for the cached export of these adapter folders (their files' names, sizes and times) and
    settings: a retrained adapter gets a new export."""
    digest = hashlib.blake2b(json.dumps(settings, sort_keys=True).encode(), digest_size=10)
    for directory in sources:
        for path in sorted(p for p in Path(directory).rglob("*") if p.is_file()):
            stat = path.stat()
            digest.update(f"{path}\n{stat.st_size}\n{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()
