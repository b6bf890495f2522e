"""A uniform model soup (Wortsman et al. 2022): task adapters trained alike, such as the seeds of one run continued
from the same adapter, averaged weight by weight into one task adapter. Seeds that start from the same weights
stay in one basin, where the average of their weights tags at least as well as they do; adapters that differ in
kind, settings, labels or language adapter are refused, since averaging them means nothing.

`soup.json` beside the averaged adapter names what it averages and the sha256 of their weights."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from xling.adapters.files import CONFIG_FILE, HEAD_CONFIG_FILE, HEAD_WEIGHTS_FILE, WEIGHTS_FILE
from xling.adapters.record import AdapterRecord
from xling.adapters.weights import read_weights, write_weights
from xling.data.fingerprints import trained_on, write_fingerprints
from xling.errors import XlingError
from xling.fileio import atomic_directory, file_sha256, write_json_atomic
from xling.roles import TASK, TASK_FILE
from xling.train.config import SoupOptions
from xling.trained_tasks import TaskRecord, task_text
from xling.workspace import Workspace

SOUP_FILE = "soup.json"
WEIGHT_FILES = (WEIGHTS_FILE, HEAD_WEIGHTS_FILE)


@dataclass(frozen=True)
class SoupRecord:
    """`soup.json`: the folders averaged, in order, and the sha256 of each one's adapter weights."""

    adapters: list[str]
    weights_sha256: list[str]


def soup(options: SoupOptions) -> Path:
    """The task adapters of `options.adapters` averaged into task adapter `options.name`; its folder."""
    workspace = Workspace(options.workspace, options.model)
    sources = [workspace.task(name) for name in options.adapters]
    task, record = alike(sources)
    averaged = {file: mean_weights([source / file for source in sources]) for file in WEIGHT_FILES}
    target = workspace.adapter_dir(TASK, options.name)
    with atomic_directory(target, overwrite=options.overwrite, replaces=(SOUP_FILE,)) as staging:
        for file, tensors in averaged.items():
            write_weights(staging / file, tensors)
        write_json_atomic(staging / CONFIG_FILE, replace(record, name=options.name).to_record())
        (staging / HEAD_CONFIG_FILE).write_bytes((sources[0] / HEAD_CONFIG_FILE).read_bytes())
        (staging / TASK_FILE).write_text(task_text(replace(task, name=options.name)), encoding="utf-8")
        if (prints := trained_on(sources)) is not None:  # what each was trained on, the soup has seen
            write_fingerprints(staging, prints)
        sums = [file_sha256(source / WEIGHTS_FILE) for source in sources]
        write_json_atomic(staging / SOUP_FILE, asdict(SoupRecord([str(s) for s in sources], sums)))
    return target


def alike(sources: list[Path]) -> tuple[TaskRecord, AdapterRecord]:
    """The task and adapter record the sources share (their names aside); refused where any other field differs."""
    tasks = [TaskRecord.read(source) for source in sources]
    missing = [str(s) for s in sources if not all((s / f).is_file() for f in (CONFIG_FILE, *WEIGHT_FILES))]
    if missing:
        raise XlingError(f"{missing[0]} is not a task adapter with its head: only those are averaged")
    records = [AdapterRecord.read(source / CONFIG_FILE) for source in sources]
    for source, other_task, other in zip(sources[1:], tasks[1:], records[1:]):
        for what, mine, theirs in (("task", tasks[0], other_task), ("adapter", records[0], other)):
            differing = [f for f in mine.__dataclass_fields__ if f != "name" and getattr(mine, f) != getattr(theirs, f)]
            if differing:
                raise XlingError(
                    f"{source} differs from {sources[0]} in its {what}'s {differing[0]} "
                    f"({getattr(theirs, differing[0])!r}, not {getattr(mine, differing[0])!r}): a soup averages "
                    "adapters trained alike"
                )
    return tasks[0], records[0]


def mean_weights(files: list[Path]) -> dict[str, torch.Tensor]:
    """Tensor by tensor, the mean of the files' weights (computed in fp32, stored as the first file stores them)."""
    states = [read_weights(file) for file in files]
    first = states[0]
    shapes = [{k: tuple(v.shape) for k, v in state.items()} for state in states]
    for file, shape in zip(files[1:], shapes[1:]):
        if shape != shapes[0]:
            raise XlingError(f"{file} holds other tensors than {files[0]}: a soup averages adapters of one shape")
    return {
        key: torch.stack([state[key].float() for state in states]).mean(0).to(tensor.dtype)
        for key, tensor in first.items()
    }


def soup_summary(options: SoupOptions, folder: Path) -> str:
    """What `xling soup` and a recipe's soup step say when it is saved."""
    return f"saved {options.name} to {folder}: the mean of {', '.join(options.adapters)}"
