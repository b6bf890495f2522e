"""Which device and precision run the model (training and tagging both ask here).

torch is imported inside the functions, so that the options, which name these choices, load without it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from xling.errors import XlingError
from xling.records import Record

DEVICE_HELP = "auto (a GPU when present), cpu or cuda."
DEVICES = ("auto", "cpu", "cuda")


def check_device(device: str) -> None:
    if device not in DEVICES:
        raise XlingError(f"device must be auto, cpu or cuda, not {device!r}")


def pick_device(requested: str) -> str:
    import torch

    if requested == "cuda" and not torch.cuda.is_available():
        raise XlingError("--device cuda was asked for, but no CUDA GPU is available")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


# oneDNN keeps the kernels it compiled for each shape it has seen, with their buffers, up to 1,024 of them. In bf16
# on an AMX CPU, tagging's padded widths of 1,000 sentences held 260 MB of them, and 40 steps of the side-by-side
# benchmark's training 450 MB (task adapter) to 830 MB (masked LM, whose masked counts vary). Tagging runs as fast
# with 16; training with 64 (16 and 32 slowed a masked-LM step by 4-8%) (bench/anchor_workload.py).
KERNELS_KEPT = {"tagging": "16", "training": "64"}


def bound_kernel_cache(work: str) -> None:
    """Bound oneDNN's cache of compiled kernels for `work` (tagging or training) on a CPU. oneDNN reads the bound
    once, at the process's first kernel, so this comes before anything computes (a precision's timing included);
    a bound the user set, or that earlier work in the process set, stays."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", KERNELS_KEPT[work])


# The widest int8 and vector units a CPU has, as /proc/cpuinfo flags them: int8 speed and ONNX Runtime's kernels
# differ between them (VNNI adds int8 products in 32 bits, AVX2 in 16).
CPU_UNITS = (("amx_int8", "AMX"), ("avx512_vnni", "AVX-512 VNNI"), ("avx512f", "AVX-512"), ("avx_vnni", "AVX-VNNI"))


def machine_name() -> str:
    """What a result was computed on: the GPU's name where one is used, else the CPU's model, its widest int8 or
    vector units and its cores."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name()
    return f"{cpu_name()}, {torch.get_num_threads()} cores"


def cpu_name() -> str:
    """The CPU's model and its widest int8 or vector units, from /proc/cpuinfo where there is one."""
    import platform

    model, flags = platform.processor() or platform.machine(), set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        lines = cpuinfo.read_text().splitlines()
        names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
        model = names[0] if names else model
        flags = set(next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), []))
    units = cpu_units(flags)
    return f"{model}{f' ({units})' if units else ''}"


def cpu_units(flags: set[str]) -> str | None:
    """The widest of `CPU_UNITS` among a CPU's flags, else AVX2 where it has that."""
    return next((name for flag, name in CPU_UNITS if flag in flags), "AVX2" if "avx2" in flags else None)


@dataclass(frozen=True)
class Precision:
    """What a `--precision` value computes in, and where: the one table every layer reads."""

    autocast: str | None  # the torch dtype autocast computes in (None: autocast off)
    devices: tuple[str, ...]  # the devices it runs on ("auto": resolved per device)
    trains: bool  # it trains (int8 is for tagging and evaluation only)
    onnx: bool  # an exported graph is stored in it (`auto` means fp32 there)
    frozen_stored: bool = False  # while training, frozen Linear weights are stored in its dtype
    grad_scaler: bool = False  # training needs accelerate's gradient scaler (its `mixed_precision`)


PRECISION_TABLE = {
    "auto": Precision(None, ("cpu", "cuda"), trains=True, onnx=True),
    "fp32": Precision(None, ("cpu", "cuda"), trains=True, onnx=True),
    "bf16": Precision("bfloat16", ("cpu", "cuda"), trains=True, onnx=False, frozen_stored=True),
    "fp16": Precision("float16", ("cuda",), trains=True, onnx=False, grad_scaler=True),
    # dynamic quantisation of the encoder's Linear layers (PyTorch) or the int8 graph (ONNX Runtime)
    "int8": Precision(None, ("cpu",), trains=False, onnx=True),
}
PRECISIONS = tuple(name for name, p in PRECISION_TABLE.items() if p.trains)
INFERENCE_PRECISIONS = tuple(PRECISION_TABLE)
_AUTO_HELP = (
    "auto (bf16 on GPUs with bf16 units and on CPUs where bf16 multiplies measured faster than fp32, once per "
    "machine, fp16 on older GPUs, else fp32)"
)
PRECISION_HELP = (
    f"{_AUTO_HELP}, fp32, bf16 or fp16 (GPU): what the model computes in; trained weights, optimiser state and "
    "losses stay fp32."
)
INFERENCE_PRECISION_HELP = (
    f"{_AUTO_HELP}, fp32, bf16, fp16 (GPU) or int8 (CPU: the encoder's Linear layers dynamically quantised)."
)


# bf16 costs precision, so auto takes it only where its matrix multiplies are clearly faster than fp32's.
BF16_MIN_SPEEDUP = 1.25


@functools.cache
def cpu_bf16_speedup() -> float:
    """How many times faster a bf16 matrix multiply runs than an fp32 one on this CPU (0 where it has no bf16
    instructions, AVX-512 BF16 or AMX, and bf16 is emulated): measured once per machine and kept in xling's
    cache (`machine/`, by CPU and torch version), so that every process, busy machine or not, decides alike.

    The instructions alone do not make bf16 pay: AMX runs it several times faster than fp32, AVX-512 BF16 on
    AMD Zen 4 faster, but an Intel Xeon without AMX (or whose AMX its hypervisor hides) took twice the fp32
    time (oneDNN's AVX-512 BF16 kernel against MKL's fp32 one), so tagging there ran at 0.6x of fp32."""
    import torch

    if not (torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()):
        return 0.0
    cpu = cpu_name()
    record = machine_record(f"bf16-speedup {cpu} torch {torch.__version__}")
    if (kept := kept_speedup(record)) is not None:
        return kept
    measured = measured_bf16_speedup()
    try:
        if os.path.lexists(record) and not is_plain_file(record):  # a folder, a FIFO, a link in the record's place:
            raise OSError(f"{record} is not a file")  # never read or replaced
        keep_first(record, json.dumps(asdict(Bf16Speedup(cpu, measured))))
        return Bf16Speedup.read(record).bf16_speedup  # the first process's, where several raced
    except (OSError, XlingError) as err:  # `machine` a file, the home read-only: this process's measurement
        not_kept(str(record.parent), getattr(err, "strerror", None) or str(err))
        return measured


def kept_speedup(record: Path) -> float | None:
    """The measurement kept in `record`; None where there is none, or one that cannot be believed (damaged,
    unreadable or impossible: removed, to be measured again)."""
    if not is_plain_file(record):
        return None
    try:
        return Bf16Speedup.read(record).bf16_speedup
    except (XlingError, OSError):
        with contextlib.suppress(OSError):  # a home that cannot be written keeps it; it is then not read again
            record.unlink()
        return None


def is_plain_file(path: Path) -> bool:
    """A regular file, not reached through a link (which could lead anywhere, a FIFO that blocks a read too)."""
    return path.is_file() and not path.is_symlink()


@functools.cache
def not_kept(folder: str, why: str) -> None:
    """Once per process: the measurement serves this process only, as nothing can be kept where xling keeps it."""
    warnings.warn(f"cannot keep this CPU's bf16 measurement in {folder} ({why}): measured for this run", stacklevel=4)


@dataclass
class Bf16Speedup(Record):
    """What xling's cache keeps of a CPU's bf16 measurement."""

    cpu: str
    bf16_speedup: float

    def __post_init__(self):
        if not (math.isfinite(self.bf16_speedup) and self.bf16_speedup >= 0):
            raise XlingError(f"a bf16 speedup is a finite number of at least 0, not {self.bf16_speedup}")


def machine_record(key: str) -> Path:
    from xling.paths import cache_dir

    return cache_dir() / "machine" / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def keep_first(path: Path, text: str) -> None:
    """Write `path` unless another process did first: the first measurement is the one every process reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    staged.write_text(text)
    try:
        os.link(staged, path)  # fails where the file exists: never replaced, never half-written
    except FileExistsError:
        pass
    finally:
        staged.unlink(missing_ok=True)


def measured_bf16_speedup() -> float:
    """One feed-forward projection of the embedded model over a batch of short sentences, fp32 against bf16,
    interleaved so that load from elsewhere slows both alike; the best of many rounds."""
    import torch

    inputs, weight = torch.randn(512, 384), torch.randn(1536, 384)
    pairs = {dtype: (inputs.to(dtype), weight.to(dtype)) for dtype in (torch.float32, torch.bfloat16)}
    best = dict.fromkeys(pairs, math.inf)
    with torch.inference_mode():
        for round in range(25):
            for dtype, (a, b) in pairs.items():
                start = time.perf_counter()
                torch.nn.functional.linear(a, b)
                if round >= 2:  # the first calls build the kernels
                    best[dtype] = min(best[dtype], time.perf_counter() - start)
    return best[torch.float32] / best[torch.bfloat16]


@functools.cache
def warn_bf16_slower(speedup: float) -> None:
    """Once per process, as the CPU does not change: a `Tagger` asks for its precision at every call."""
    why = (
        "this CPU has no bf16 matrix units (AVX-512 BF16 or AMX): bf16 is emulated"
        if speedup == 0
        else f"bf16 matrix multiplies take {1 / speedup:.1f}x the fp32 time on this CPU"
    )
    warnings.warn(f"{why}; --precision auto picks fp32 here", stacklevel=3)


def check_precision(requested: str, inference: bool = False) -> str:
    allowed = INFERENCE_PRECISIONS if inference else PRECISIONS
    if requested not in allowed:
        hint = " (int8 is for tagging and evaluation)" if requested == "int8" else ""
        raise XlingError(f"precision must be one of {', '.join(allowed)}, not {requested!r}{hint}")
    return requested


ON_DEVICE = {
    "cpu": "--precision fp16 runs on a GPU only; use bf16 or fp32 on the CPU",
    "cuda": "--precision int8 (dynamic quantisation) runs on the CPU only; use bf16 or fp16 on a GPU",
}


def pick_precision(requested: str, device: str) -> str:
    """fp32, bf16 or fp16 (or int8, for inference) for `device` (cpu or cuda)."""
    if device not in PRECISION_TABLE[check_precision(requested, inference=True)].devices:
        raise XlingError(ON_DEVICE[device])
    if requested == "bf16" and device == "cpu" and (speedup := cpu_bf16_speedup()) < 1:
        warn_bf16_slower(speedup)
    if requested != "auto":
        return requested
    if device == "cuda":
        import torch

        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "bf16" if cpu_bf16_speedup() >= BF16_MIN_SPEEDUP else "fp32"


def autocast(device: str, precision: str):
    """The autocast context for a picked precision (fp32: autocast off)."""
    import torch

    dtype = torch_dtype(precision)
    return torch.autocast(device, dtype=dtype, enabled=dtype is not None)


def torch_dtype(precision: str):
    """The torch dtype a picked precision computes in under autocast (None: fp32, autocast off)."""
    import torch

    name = PRECISION_TABLE[precision].autocast
    return getattr(torch, name) if name else None
