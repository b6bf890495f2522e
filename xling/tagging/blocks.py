"""Tagging a file into a file in blocks: resumable, and shared among processes that a launcher started
(`torchrun --nproc-per-node N -m xling tag ...`, or `accelerate launch`), on CPU cores or GPUs.

The input's results-to-be (its lines, or its CoNLL sentences) are read as a stream and cut
into blocks of `BLOCK`; block k is tagged by process k mod WORLD_SIZE, which writes it to
`<output>.parts/<k>.<format>` at once (atomically) with its counts beside. When every block is written the
first process joins them in input order into the output and removes the folder. A stopped run, started again
with the same input and options, tags only the blocks that are missing: no line twice, none lost. Memory stays
that of one block whatever the input's size.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import timedelta
from itertools import count, islice
from pathlib import Path

from rich.console import Console

from xling.data.conll import read_lines, read_rows, whole_lines
from xling.errors import XlingError
from xling.fileio import atomic_text_file, write_json_atomic, write_text_atomic
from xling.names import no_link
from xling.options import at_least
from xling.records import Record, read_record
from xling.tagging.options import TagOptions
from xling.tagging.output import render

BLOCK = 512  # results per block: several model reads, so that batching by length still pays
BLOCK_FORMATS = ("jsonl", "conll")  # the formats whose blocks join by concatenation


@dataclass(frozen=True)
class Launch:
    """This process's place among those a launcher started (torchrun's environment; one process without)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @classmethod
    def from_environment(cls) -> Launch:
        return cls(*(int(os.environ.get(name, default)) for name, default in LAUNCH_VARIABLES))


LAUNCH_VARIABLES = (("RANK", 0), ("WORLD_SIZE", 1), ("LOCAL_RANK", 0))


def unit_name(options: TagOptions) -> str:
    """What one result is the tagging of: a line, or a sentence of CoNLL input."""
    return "sentences" if options.conll else "lines"


def units(path: Path, conll: bool) -> Iterator:
    """What each result is tagged from: CoNLL sentences' tokens, or the numbered lines (a long one whole, so
    that no block boundary cuts it)."""
    if conll:
        return read_rows(read_lines(path))
    return whole_lines(read_lines(path), str(path))


def blocks(items: Iterable, size: int = BLOCK) -> Iterator[list]:
    iterator = iter(items)
    while block := list(islice(iterator, size)):
        yield block


def parts_dir(output: Path) -> Path:
    return output.with_name(output.name + ".parts")


@dataclass(frozen=True)
class TagJob:
    """`job.json` in a tag job's parts folder: what its blocks are the results of. Blocks of another job (another
    input, options, block size or precision) are never joined with these."""

    input: str
    size: int
    mtime_ns: int
    block: int
    units: str  # lines, or sentences for CoNLL input
    precision: str
    options: str  # a digest of every option

    @classmethod
    def read(cls, file: Path) -> TagJob | None:
        """The job a parts folder was left by; None for a record no job of this xling wrote (another job's)."""
        try:
            return read_record(file, cls)
        except XlingError:
            return None


def job_of(options: TagOptions, path: Path) -> TagJob:
    """What the blocks are the results of: the input file as it is now, every option, the block size."""
    stat = path.stat()
    tagger = replace(options.tagger, workspace=str(options.tagger.workspace))  # the Python API may give a Path
    fields = asdict(replace(options, output=None, tagger=tagger))
    return TagJob(
        input=str(path.resolve()),
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        block=BLOCK,
        units=unit_name(options),
        precision=computed_in(options.tagger),
        options=hashlib.blake2b(json.dumps(fields, sort_keys=True).encode(), digest_size=10).hexdigest(),
    )


def computed_in(spec) -> str:
    """What a tagger of `spec` computes in: `auto` resolved as `Tagger.load` resolves it (ONNX: as given)."""
    if spec.runtime != "torch" or spec.precision != "auto":
        return spec.precision
    from xling.device import pick_device, pick_precision

    return pick_precision("auto", pick_device(spec.device))


def prepare_parts(folder: Path, job: TagJob) -> None:
    """The parts folder of this job: kept to go on from, or emptied if an earlier, different job left it."""
    record = folder / "job.json"
    if folder.exists() and not record.is_file():
        raise XlingError(f"{folder} exists and is not xling's (no job.json); move it, or write the output elsewhere")
    if folder.is_dir() and TagJob.read(record) != job:
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(record, asdict(job))


@dataclass
class BlockCounts(Record):
    """A finished block's `<number>.json`: what it holds, and by its presence that it is whole."""

    results: int
    entities: int

    def __post_init__(self):
        at_least("results", self.results, 0)
        at_least("entities", self.entities, 0)


def block_files(folder: Path, number: int, output_format: str) -> tuple[Path, Path]:
    return folder / f"{number:08d}.{output_format}", folder / f"{number:08d}.json"


def tag_blocks(
    tagger, options: TagOptions, path: Path, folder: Path, launch: Launch, progress=None, sizes: list[int] = ()
) -> None:
    """Tag this process's missing blocks, each written whole as soon as it is done; `progress` wraps them, counting
    the lines (or sentences) of those that are this process's to do, given each block's (`sizes`, `block_sizes`)."""
    output_format = options.output_format()

    def missing(number: int) -> bool:
        return number % launch.world == launch.rank and not block_files(folder, number, output_format)[1].is_file()

    mine = ((n, block) for n, block in enumerate(blocks(units(path, options.conll))) if missing(n))
    if progress is not None:
        to_do = sum(size for n, size in enumerate(sizes) if missing(n))
        mine = progress(mine, to_do, unit_name(options), lambda numbered: len(numbered[1]))
    for number, block in mine:
        # The whole block as one read: sorted by length together, its batches pad least (a fifth faster than
        # `pipe`'s growing reads, which are for the first results of a stream).
        if options.conll:
            results = tagger.tag_rows(block, count(number * BLOCK + 1))
        else:
            where = (options.paragraphs, False, options.jsonl, str(path))
            results = list(tagger.tag_numbered(block, *where, streaming=False))
        text_file, counts_file = block_files(folder, number, output_format)
        write_text_atomic(text_file, render(results, output_format))
        write_json_atomic(counts_file, asdict(BlockCounts(len(results), sum(len(r.spans) for r in results))))


def block_sizes(path: Path, conll: bool) -> list[int]:
    """The results of each block of the input, in order (its length is the number of blocks)."""
    return [len(block) for block in blocks(units(path, conll))]


def join_blocks(folder: Path, output: Path, number_of_blocks: int, output_format: str, console: Console) -> None:
    """The blocks, in input order, into `output` (whole or not at all); the parts folder goes."""
    total = BlockCounts(0, 0)
    with atomic_text_file(output) as f:
        for number in range(number_of_blocks):
            text_file, counts_file = block_files(folder, number, output_format)
            if not counts_file.is_file():
                raise XlingError(f"{folder}: block {number} is missing; run the same command again to finish it")
            try:
                counts = BlockCounts.read(counts_file)
            except XlingError as err:  # a block whose counts are damaged is tagged again once they are gone
                raise XlingError(f"{err}; remove it and {text_file.name}, then run the same command again") from None
            with text_file.open(encoding="utf-8") as block:
                shutil.copyfileobj(block, f)
            total = BlockCounts(total.results + counts.results, total.entities + counts.entities)
    shutil.rmtree(folder)
    console.print(f"[green]wrote[/] {output}: {total.results} lines, {total.entities} entities")


@contextmanager
def process_group(launch: Launch) -> Iterator[Callable[[], None]]:
    """A barrier across the launched processes (torch.distributed over gloo; nothing to wait for alone)."""
    if launch.world == 1:
        yield lambda: None
        return
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=timedelta(days=7))  # a barrier waits for the slowest shard
    try:
        yield dist.barrier
    finally:
        dist.destroy_process_group()


def run_in_blocks(load: Callable, options: TagOptions, launch: Launch, console: Console, progress=None) -> None:
    """`xling tag` block by block (`in_blocks`): this process's share of the blocks (`launch`), with the tagger
    `load` gives; the first process loads first (an ONNX export on first use is made once)."""
    path, output = Path(options.input), Path(options.output)
    folder = parts_dir(output)
    with process_group(launch) as barrier:
        sizes = []  # the input's blocks: the first process shows the progress and joins them
        if launch.rank == 0:
            sizes = block_sizes(path, options.conll)
            prepare_parts(folder, job_of(options, path))
            tagger = load()
        barrier()
        if launch.rank != 0:
            tagger = load()
        tag_blocks(tagger, options, path, folder, launch, progress if launch.rank == 0 else None, sizes)
        barrier()
        if launch.rank == 0:
            join_blocks(folder, output, len(sizes), options.output_format(), console)


def check_blocks(options: TagOptions, launch: Launch) -> None:
    """Several processes need a file in and a file out in a format that joins; the parts folder is no link."""
    if options.output:
        folder = parts_dir(Path(options.output))
        no_link(folder.parent, Path(folder.name), "tag's parts folder")
    if launch.world > 1 and (options.input == "-" or not options.output):
        raise XlingError("tagging in several processes reads a file and writes --output FILE (not standard streams)")
    if launch.world > 1 and options.output_format() not in BLOCK_FORMATS:
        raise XlingError(
            f"tagging in several processes writes {' or '.join(BLOCK_FORMATS)}, not {options.output_format()}"
        )


def in_blocks(options: TagOptions) -> bool:
    """Whether `xling tag` goes block by block: a file into a file of a format that joins. An output that exists
    and is no regular file (a device, a FIFO) is written in place as results come, with no parts beside it."""
    output = Path(options.output) if options.output else None
    if output is None or (output.exists() and not output.is_file()):
        return False
    return options.input != "-" and options.output_format() in BLOCK_FORMATS
