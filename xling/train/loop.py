"""The one training loop every objective shares.

It runs on a GPU when one is present, on the CPU otherwise, under bf16 (or, on older GPUs,
fp16) autocast where the hardware has the units for it (`precision`), and as torch DDP
under `torchrun` or `accelerate launch` (each process trains on its share of every batch).
It checkpoints every N steps (trainable weights, optimiser, scheduler, RNG state, data
position) and when stopped by Ctrl-C or SIGTERM, at the end of the step under way; rerunning
the same command resumes from the last checkpoint and finishes exactly as an uninterrupted
run would, whatever stopped it (kill -9 included). It reports through a `TrainingProgress`;
the command line's progress bar lives in `xling.cli`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

import torch

from xling.adapters import AdaptedModel
from xling.adapters.heads import MaskedLMHead
from xling.data.labels import IGNORE
from xling.device import autocast, pick_device, pick_precision
from xling.errors import XlingError
from xling.fileio import parse_json
from xling.models.stored_weights import lower_linear_weights
from xling.options import printable
from xling.train.checkpoint import load_checkpoint, save_checkpoint, saved_value
from xling.train.config import TrainConfig
from xling.train.cpu import cpu_training

LOG_FILE = "log.jsonl"
RUN_FILE = "run.json"


class Objective(Protocol):
    """What the loop needs from a training objective."""

    evaluate_at_start: bool  # e.g. held-out perplexity before training
    selects_best: bool  # keep the weights of the best evaluation `score`

    def micro_batches_per_epoch(self, batch_size: int) -> int: ...

    def batches(self, epoch: int, batch_size: int) -> Iterator[dict]: ...

    def prepare(self, batch: dict, step: int) -> dict[str, torch.Tensor]:
        """The batch as tensors with one row per example: `input_ids`, `attention_mask`, `labels` (IGNORE
        where a position carries no loss) and any other per-row tensor `loss` reads; any randomness follows
        the seed and step alone."""

    def loss(self, model: AdaptedModel, batch: dict[str, torch.Tensor], scale: float) -> torch.Tensor:
        """The summed loss over the batch's labelled positions times `scale`, plus any regulariser."""

    def evaluate(self, model: AdaptedModel) -> dict[str, float]: ...

    def describe(self, loss: float) -> str: ...


@dataclass
class TrainResult:
    steps: int
    seconds: float
    tokens: int
    evaluations: list[dict] = field(default_factory=list)
    best: dict | None = None
    stopped_early: bool = False
    is_main_process: bool = True  # under torchrun / accelerate launch, only the main process saves
    precision: str = "fp32"  # what the model computed in


def process_state(device: str):
    """accelerate's state of this process for a picked device: a process of its own, or one of those that
    torchrun or accelerate launch started.

    accelerate sets its state once per process and then refuses another device or precision (or keeps
    the CPU silently), yet a process of its own may train on a GPU, then on the CPU (recipes, the Python
    API): until processes are joined in a group, its state is made afresh each time (what accelerate's own
    tests do between runs)."""
    from accelerate import PartialState
    from accelerate.state import AcceleratorState

    local_processes = int(os.environ.get("LOCAL_WORLD_SIZE", 1))  # set by both launchers
    if device == "cuda" and local_processes > (gpus := torch.cuda.device_count()):
        raise XlingError(
            f"{local_processes} processes were started on a machine with {gpus} GPU(s), and DDP needs a GPU for "
            f"each: start {gpus} (--nproc_per_node / --num_processes), or pass --device cpu to train CPU processes"
        )
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        AcceleratorState._reset_state(reset_partial_state=True)
    return PartialState(cpu=device == "cpu")


def make_accelerator(device: str, precision: str, report_to: str | None = None, log_dir: Path | None = None):
    """The accelerator for a picked device and precision, reporting to a tracker (`report_to`).

    bf16 runs under xling's own autocast (`_Run.autocast`): accelerate fixes its precision once per
    process, and one process may train at several (recipes, the Python API). fp16 needs accelerate's
    gradient scaler, so it is accelerate's setting."""
    from accelerate import Accelerator

    process_state(device)
    mixed = "fp16" if precision == "fp16" else "no"
    return Accelerator(cpu=device == "cpu", mixed_precision=mixed, log_with=report_to, project_dir=log_dir)


def wait_for_everyone(state) -> None:
    """Wait until every process gets here. accelerate's barrier (`state.wait_for_everyone()`) names this
    process's GPU even when CPU processes train over gloo, which fails on a machine with fewer GPUs than
    processes; a barrier on the CPU names none."""
    if state.num_processes > 1 and state.device.type == "cpu":
        torch.distributed.barrier()
    else:
        state.wait_for_everyone()


class _LossModule(torch.nn.Module):
    """The model and its objective's loss as one module, so that DDP sees the whole forward pass."""

    def __init__(self, model: AdaptedModel, objective: Objective):
        super().__init__()
        self.model = model
        self.objective = objective

    def forward(self, batch: dict[str, torch.Tensor], scale: float) -> torch.Tensor:
        return self.objective.loss(self.model, batch, scale)


def _shard(batch: dict[str, torch.Tensor], rank: int, world: int) -> dict[str, torch.Tensor]:
    """This process's rows of the global batch; a batch smaller than the world is padded with loss-free rows."""
    rows = len(batch["labels"])
    if rows < world:
        padding = {k: v[:1].expand(world - rows, *v.shape[1:]) for k, v in batch.items()}
        padding["labels"] = torch.full_like(padding["labels"], IGNORE)
        batch = {k: torch.cat([v, padding[k]]) for k, v in batch.items()}
    return {k: v.tensor_split(world)[rank] for k, v in batch.items()}


def _trainable(model: AdaptedModel) -> dict[str, torch.nn.Parameter]:
    return {n: p for n, p in model.named_parameters() if p.requires_grad}


def _damaged(run_dir: Path, what: str) -> XlingError:
    return XlingError(f"the interrupted run in {run_dir} is damaged ({what}); add --restart to start over")


def _check_run_options(run_dir: Path, options: dict, write: bool) -> None:
    run_file = run_dir / RUN_FILE
    if run_file.is_file():
        try:
            previous = parse_json(run_file.read_text())
        except (ValueError, UnicodeDecodeError, RecursionError):  # ValueError: also NaN, a 4,300-digit integer
            raise _damaged(run_dir, f"{RUN_FILE} is not valid JSON") from None
        if not isinstance(previous, dict):
            raise _damaged(run_dir, f"{RUN_FILE} is not a JSON object of options")
        if previous != options:
            changed = sorted(k for k in set(previous) | set(options) if previous.get(k) != options.get(k))
            raise XlingError(
                f"an interrupted run in {run_dir} used other options ({printable(', '.join(map(str, changed)))}); "
                "rerun with the same options to resume, or add --restart to start over"
            )
    elif write:
        run_dir.mkdir(parents=True, exist_ok=True)
        run_file.write_text(json.dumps(options, indent=2, sort_keys=True) + "\n")


def _read_log(run_dir: Path, up_to_step: int, write: bool) -> list[dict]:
    """The log's evaluations up to the checkpoint's step; a last line cut short by a kill is dropped."""
    log = run_dir / LOG_FILE
    lines = [line for line in log.read_text().splitlines() if line.strip()] if log.is_file() else []
    entries = []
    for number, line in enumerate(lines, start=1):
        try:
            entry = parse_json(line)
        except (ValueError, RecursionError):
            if number == len(lines):
                break
            raise _damaged(run_dir, f"{LOG_FILE} line {number} is not valid JSON") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("step"), int):
            raise _damaged(run_dir, f"{LOG_FILE} line {number} is not an evaluation record")
        entries.append(entry)
    entries = [e for e in entries if e["step"] <= up_to_step]
    if write:
        log.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return entries


class TrainingProgress(Protocol):
    """Where the loop reports: a progress bar in the command line (`xling.cli.progress`), text otherwise."""

    def start(self, title: str, total: int, done: int) -> None: ...

    def advance(self, done: int, info: str) -> None: ...

    def note(self, text: str) -> None: ...

    def stop(self) -> None: ...


class TextProgress:
    """Notes as plain lines on stderr, no bar: the default outside the command line."""

    def start(self, title: str, total: int, done: int) -> None:
        pass

    def advance(self, done: int, info: str) -> None:
        pass

    def note(self, text: str) -> None:
        print(text, file=sys.stderr)

    def stop(self) -> None:
        pass


class _Run:
    """One call of `train`: what resuming, evaluating, stepping and checkpointing share."""

    def __init__(self, model, objective, config, run_dir, accelerator, precision, progress):
        self.objective, self.config, self.run_dir, self.progress = objective, config, run_dir, progress
        self.accelerator, self.precision = accelerator, precision
        self.main, self.rank, self.world = (
            accelerator.is_main_process,
            accelerator.process_index,
            accelerator.num_processes,
        )
        model.to(accelerator.device)
        self.trainable = _trainable(model)  # the same tensors before and after DDP wrapping
        if not self.trainable:
            raise XlingError("nothing to train: no parameter requires gradients")
        store_frozen_weights(model, precision)
        self.optimizer = make_optimizer(self.trainable.values(), config.learning_rate, config.weight_decay)
        self.per_epoch = max(1, objective.micro_batches_per_epoch(config.batch_size) // config.grad_accum)
        self.total = config.max_steps or max(1, math.ceil(config.epochs * self.per_epoch))
        warmup = int(config.warmup if config.warmup >= 1 else config.warmup * self.total)
        from transformers import get_linear_schedule_with_warmup

        # Not prepared by accelerate, which would step it once per process: here the batch is global.
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, warmup, self.total)
        self.state = {"step": 0, "epoch": 0, "position": 0, "tokens": 0, "seconds": 0.0, "best": None, "stale": 0}
        self.best_weights: dict[str, torch.Tensor] | None = None
        self.model = model

    def autocast(self):
        return autocast(self.accelerator.device.type, self.precision)

    def resume(self, title: str) -> None:
        """Load the last checkpoint, if any, before the model is wrapped for DDP."""
        try:
            saved = load_checkpoint(self.run_dir / "checkpoint")
        except XlingError as err:
            raise _damaged(self.run_dir, str(err)) from None
        if saved is not None:
            try:
                with torch.no_grad():
                    for name, value in saved["weights"].items():
                        self.trainable[name].copy_(value)
                self.optimizer.load_state_dict(saved["optimizer"])
                self.scheduler.load_state_dict(saved["scheduler"])
            except (KeyError, RuntimeError, ValueError, TypeError) as err:
                raise _damaged(
                    self.run_dir, f"its checkpoint does not fit this model: {str(err).splitlines()[0]}"
                ) from None
            if self.main:  # the other processes keep their own dropout streams
                torch.set_rng_state(saved["rng"])
                if torch.cuda.is_available() and saved.get("cuda_rng") is not None:
                    torch.cuda.set_rng_state_all(saved["cuda_rng"])
            self.state = saved["state"]
            self.best_weights = saved.get("best_weights")
            self.progress.note(f"resuming {title} from step {self.state['step']} of {self.total} ({self.run_dir})")
        self.evaluations = _read_log(self.run_dir, self.state["step"], write=self.main)
        # `wrapped` runs the training forward (DDP under a launcher); evaluation uses `model` itself.
        self.wrapped, self.optimizer = self.accelerator.prepare(_LossModule(self.model, self.objective), self.optimizer)

    def evaluate(self) -> dict:
        """The main process evaluates; every process gets the result and takes the same early-stopping decision."""
        from accelerate.utils import broadcast_object_list

        state, metrics = self.state, None
        if self.main:
            self.model.eval()
            with torch.no_grad(), self.autocast():
                metrics = self.objective.evaluate(self.model)
            training_mode(self.model, self.config.encoder_dropout)
        metrics = broadcast_object_list([metrics])[0]
        entry = {
            "step": state["step"],
            "epoch": round(state["epoch"] + state["position"] / max(1, self.per_epoch * self.config.grad_accum), 3),
            "seconds": round(state["seconds"], 1),
            **metrics,
        }
        self.evaluations.append(entry)
        self.track({f"eval/{k}": v for k, v in metrics.items() if isinstance(v, int | float) and math.isfinite(v)})
        if self.main:
            with open(self.run_dir / LOG_FILE, "a") as log:
                log.write(json.dumps(entry) + "\n")
            shown = (f"{k} {v:.4g}" for k, v in metrics.items() if k != "score" and isinstance(v, (int, float)))
            self.progress.note(f"step {entry['step']}: " + "  ".join(shown))
        if self.objective.selects_best:
            if state["best"] is None or metrics["score"] > state["best"]["score"]:
                state["best"], state["stale"] = entry, 0
                self.best_weights = {n: p.detach().clone().cpu() for n, p in self.trainable.items()}
            else:
                state["stale"] += 1
        return entry

    def track(self, values: dict[str, float]) -> None:
        """Numbers for the tracker `--report-to` names, at this step (none named: nowhere)."""
        if self.config.report_to:
            self.accelerator.log(values, step=self.state["step"])

    def agreed(self, stopping: bool) -> bool:
        """Whether any process was told to stop: all stop after the same step (one stopping alone would leave the
        others waiting in the next step's gradient exchange)."""
        if self.world == 1:
            return stopping
        flag = torch.tensor(float(stopping), device=self.accelerator.device)
        return bool(self.accelerator.reduce(flag, "sum") > 0)

    def checkpoint(self, rng_state: torch.Tensor) -> None:
        if not self.main:
            return
        save_checkpoint(
            self.run_dir / "checkpoint",
            {
                "weights": {n: p.detach() for n, p in self.trainable.items()},
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "rng": rng_state,
                "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
                "state": dict(self.state),
                "precision": self.precision,
                **({"best_weights": self.best_weights} if self.best_weights is not None else {}),
            },
        )

    def step(self, batches: Iterator[dict]) -> tuple[float, int, Iterator[dict]]:
        """One optimiser step over `grad_accum` micro-batches: (mean loss, tokens, the batches left)."""
        state, config, accelerator = self.state, self.config, self.accelerator
        step_loss, step_tokens = torch.zeros((), device=accelerator.device), 0
        for micro in range(config.grad_accum):
            batch = next(batches, None)
            if batch is None:
                state["epoch"], state["position"] = state["epoch"] + 1, 0
                batches = self.objective.batches(state["epoch"], config.batch_size)
                batch = next(batches)
            state["position"] += 1
            tensors = self.objective.prepare(batch, state["step"])
            labelled = int((tensors["labels"] != IGNORE).sum())
            step_tokens += int(tensors["attention_mask"].sum())
            shard = {k: v.to(accelerator.device) for k, v in _shard(tensors, self.rank, self.world).items()}
            # DDP averages gradients over processes: `world` makes that average the global sum.
            scale = self.world / max(1, labelled)
            last = micro == config.grad_accum - 1
            with nullcontext() if last else accelerator.no_sync(self.wrapped), self.autocast():
                loss = self.wrapped(shard, scale) / config.grad_accum
            accelerator.backward(loss)
            step_loss += loss.detach()
        loss = float(accelerator.reduce(step_loss, "mean"))
        if not math.isfinite(loss):  # before the update: the weights stay as they were
            raise XlingError(
                f"training stopped: the loss became {loss} at step {state['step'] + 1}; nothing "
                f"was saved, and the last good checkpoint stays in {self.run_dir} (try a lower --lr)"
            )
        if config.max_grad_norm:
            accelerator.clip_grad_norm_(list(self.trainable.values()), config.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        state["step"] += 1
        state["tokens"] += step_tokens
        return loss, step_tokens, batches


def train(
    model: AdaptedModel,
    objective: Objective,
    config: TrainConfig,
    run_dir: Path,
    run_options: dict,
    title: str = "training",
    progress: TrainingProgress | None = None,
    restart: bool = False,
) -> TrainResult:
    """Train the model's trainable parameters on `objective`, resuming from `run_dir` if possible.

    Under `torchrun` or `accelerate launch` every process builds the same global batch of
    `config.batch_size` rows and trains on its share; the loss is normalised by the labelled
    positions of the whole batch, so the update equals a single process's on that batch. Only
    the main process evaluates and writes the run directory.
    """
    run_dir = Path(run_dir)
    device, precision, accelerator = _prepare(config, run_dir, run_options, restart)
    main = accelerator.is_main_process
    progress = _Silent() if not main else progress or TextProgress()
    torch.manual_seed(config.seed + accelerator.process_index)  # dropout differs between processes, as between rows
    run = _Run(model, objective, config, run_dir, accelerator, precision, progress)
    run.resume(title)
    if config.report_to:
        accelerator.init_trackers(f"{run_dir.parent.name}-{run_dir.name.removesuffix('.partial')}", flat(run_options))
    state = run.state
    if state["step"] == 0 and objective.evaluate_at_start and not run.evaluations:
        run.evaluate()
    eval_every = config.eval_every or run.per_epoch
    session_start, session_tokens, running_loss, stopped_early = time.perf_counter(), 0, [], False
    batches = _skip(objective.batches(state["epoch"], config.batch_size), state["position"])
    boundary_rng = torch.get_rng_state()
    training_mode(model, config.encoder_dropout)
    progress.start(title, run.total, state["step"])
    with cpu_training(model.encoder, device), _StopSignals() as stop:
        try:
            while state["step"] < run.total:
                step_start = time.perf_counter()
                loss, tokens, batches = run.step(batches)
                state["seconds"] += time.perf_counter() - step_start
                boundary_rng = torch.get_rng_state()
                session_tokens += tokens
                running_loss = (running_loss + [loss])[-20:]
                rate = session_tokens / max(1e-9, time.perf_counter() - session_start)
                progress.advance(
                    state["step"], f"{objective.describe(sum(running_loss) / len(running_loss))}  {rate:,.0f} tok/s"
                )
                run.track({"train/loss": loss, "train/learning_rate": run.scheduler.get_last_lr()[0]})
                if state["step"] % eval_every == 0 or state["step"] == run.total:
                    run.evaluate()
                    if config.patience is not None and state["stale"] >= config.patience:
                        stopped_early = True
                        progress.note(f"stopping early: no improvement in {config.patience} evaluations")
                        break
                if state["step"] % config.checkpoint_every == 0 and state["step"] < run.total:
                    run.checkpoint(boundary_rng)
                if run.agreed(stop.received is not None) and state["step"] < run.total:
                    run.checkpoint(boundary_rng)  # the state between two steps: what a rerun resumes exactly
                    progress.note(f"interrupted at step {state['step']}; rerun the same command to resume")
                    stop.act()
        except KeyboardInterrupt:  # a second signal: at once; the last checkpoint stays, itself between steps
            progress.note("interrupted; rerun the same command to resume from the last checkpoint")
            raise
        finally:
            progress.stop()
            if config.report_to:
                accelerator.end_training()
    if objective.selects_best and run.best_weights is not None:
        with torch.no_grad():
            for name, param in run.trainable.items():
                param.copy_(run.best_weights[name].to(param.device))
    return TrainResult(
        state["step"], state["seconds"], state["tokens"], run.evaluations, state["best"], stopped_early, main, precision
    )


class _StopSignals:
    """Ctrl-C and SIGTERM stop training at the end of the step under way, not inside it: a step cut short would
    leave a batch drawn but never trained, or weights updated for a step not yet counted, and the checkpoint would
    not be the state of any uninterrupted run. A second signal stops at once. Signals a process ignores (a
    background job's SIGINT) stay ignored; outside the main thread nothing is installed."""

    def __enter__(self):
        self.received: int | None = None
        self.previous = {}
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(number) is not signal.SIG_IGN:
                    self.previous[number] = signal.signal(number, self._handle)
        return self

    def _handle(self, number, frame) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = number

    def act(self) -> None:
        """Leave as the signal would have: Ctrl-C as KeyboardInterrupt, SIGTERM with its exit status."""
        if self.received == signal.SIGTERM:
            raise SystemExit(128 + signal.SIGTERM)
        raise KeyboardInterrupt

    def __exit__(self, *exc) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)


def _prepare(config: TrainConfig, run_dir: Path, run_options: dict, restart: bool):
    """The device, precision and accelerator of a run, with its folder cleared (`restart`) or checked against the
    options it was started with."""
    # `auto` picks by timing, which a busy machine can tip: a resumed run keeps the precision it started with
    resumed = None if restart or config.precision != "auto" else saved_value(run_dir / "checkpoint", "precision")
    log_dir = run_dir.parent.parent / "logs" if config.report_to else None
    device, precision, accelerator = _processes(config, resumed, log_dir)
    if accelerator.is_main_process:
        _clear_run_dir(run_dir, restart)
    wait_for_everyone(accelerator)
    # where it reports is no part of what it trains with: a resumed run may report elsewhere
    recorded = {key: value for key, value in asdict(config).items() if key != "report_to"}
    _check_run_options(run_dir, {**run_options, "train": recorded}, write=accelerator.is_main_process)
    wait_for_everyone(accelerator)
    return device, precision, accelerator


def _processes(config: TrainConfig, resumed: str | None = None, log_dir: Path | None = None):
    """The device, the precision (`resumed`: the one an interrupted run was in) and the accelerator of this run
    (one process, or each of a distributed run)."""
    device = pick_device(config.device)
    usable = resumed in ("fp32", "bf16") or (resumed == "fp16" and device == "cuda")
    precision = resumed if usable else pick_precision(config.precision, device)
    accelerator = make_accelerator(device, precision, config.report_to, log_dir)
    if accelerator.num_processes > 1 and device == "cpu":
        # auto times bf16 in each process: all train in what the first one picked
        from accelerate.utils import broadcast_object_list

        precision = broadcast_object_list([precision])[0]
    return device, precision, accelerator


def flat(record: dict, prefix: str = "") -> dict:
    """A run's options as a tracker's hyperparameters: nested keys joined by `/`, lists and None as text."""
    found = {}
    for key, value in record.items():
        if isinstance(value, dict):
            found |= flat(value, f"{prefix}{key}/")
        else:
            found[f"{prefix}{key}"] = value if isinstance(value, int | float | str | bool) else str(value)
    return found


def _clear_run_dir(run_dir: Path, restart: bool) -> None:
    """With `restart`, discard an interrupted run; a run folder that is a link is never followed (it could lead
    out of the workspace): refused, or with `restart` removed (the link, not what it points to)."""
    if run_dir.is_symlink():
        if not restart:
            raise XlingError(f"{run_dir} is a symbolic link, which xling does not follow; remove it or add --restart")
        run_dir.unlink()
    if restart and run_dir.exists():
        shutil.rmtree(run_dir)


def make_optimizer(params, learning_rate: float, weight_decay: float = 0.0) -> torch.optim.Optimizer:
    # fused: one kernel over all parameters; the per-parameter loop took 0.93 s a step for a full
    # fine-tuning's 117 M parameters on 2 CPU cores, fused 0.05 s
    return torch.optim.AdamW(params, lr=learning_rate, weight_decay=weight_decay, fused=True)


def store_frozen_weights(model: AdaptedModel, precision: str) -> None:
    """Under bf16, frozen Linear weights are stored in bf16, in place: autocast would cast them to the same
    values at every call. Embeddings and LayerNorms stay fp32, as when tagging: stored in bf16 they would
    carry the whole residual stream in bf16, and the task adapter would learn from other numbers than it
    meets later. What trains stays fp32 (master weights, optimiser state)."""
    if precision == "bf16":
        # not the heads: a frozen pretrained head is saved with the adapter, and must be saved as it was loaded
        for part in (model.encoder, model.adapters, model.fusions):
            lower_linear_weights(part, torch.bfloat16, frozen_only=True)
        for head in model.heads.values():
            if isinstance(head, MaskedLMHead) and not head.embeddings.weight.requires_grad:
                head.store_decoder(torch.bfloat16)  # the embedding matrix as the masked-LM decoder's weight


def training_mode(model: AdaptedModel, encoder_dropout: bool) -> None:
    """Training mode; without `encoder_dropout` a frozen encoder stays in eval mode: its dropout draws a
    random mask over every activation (a fifth of a task-adapter step on a CPU) to regularise what trains."""
    model.train()
    if not encoder_dropout and not any(p.requires_grad for p in model.encoder.parameters()):
        model.encoder.eval()


class _Silent(TextProgress):
    """The other processes of a distributed run say nothing."""

    def note(self, text: str) -> None:
        pass


def _skip(batches: Iterator[dict], count: int) -> Iterator[dict]:
    for _ in range(count):
        next(batches, None)
    return batches
