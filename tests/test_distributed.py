"""Distributed training on CPU (gloo): two processes under torchrun or accelerate launch train
one adapter, each on its share of every batch, and end where one process ends; accelerate's state of
a process that trains alone, and launches with more processes than GPUs."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.tiny import run_xling

ENTRY = Path(__file__).with_name("distributed_entry.py")
TASK = Path("tinybert") / "task" / "ner-en"


def _launch(
    launcher: list[str],
    workspace: Path,
    data: tuple,
    rows: Path,
    crash_at: int | None = None,
    precision: str = "fp32",  # the check is that two processes make one process's update, to float rounding
    bf16_speedups: str | None = None,
):
    model_dir, train, dev = data
    rows.mkdir(parents=True, exist_ok=True)
    pythonpath = os.pathsep.join(filter(None, [str(ENTRY.parent.parent), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "XLING_TEST_ROWS": str(rows), "PYTHONPATH": pythonpath}
    if crash_at:
        env["XLING_TEST_CRASH_AT"] = str(crash_at)
    if bf16_speedups:
        env["XLING_TEST_BF16_SPEEDUPS"] = bf16_speedups
    command = [*launcher, str(ENTRY), "train-task", "ner", "--lang", "en", "--train", str(train), "--dev", str(dev)]
    command += ["-m", str(model_dir), "-w", str(workspace), "--batch-size", "8", "--epochs", "1", "--seed", "3"]
    command += ["--checkpoint-every", "4", "--eval-every", "10", "--lr", "5e-3", "--precision", precision]
    command += ["--device", "cpu"]  # gloo: two processes cannot share one GPU under NCCL
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _weights(workspace: Path) -> dict[str, torch.Tensor]:
    task = workspace / TASK
    return {**load_file(task / "xling_adapter.safetensors"), **load_file(task / "head_model.safetensors")}


def _rows(directory: Path, rank: int) -> list[int]:
    return [int(n) for n in (directory / f"rows-{rank}.txt").read_text().split()]


@pytest.fixture(scope="module")
def single_run(trained_workspace, tmp_path_factory):
    root, model_dir, train, dev = trained_workspace
    workspace = tmp_path_factory.mktemp("single") / "ws"
    shutil.copytree(root / "ws" / "tinybert" / "lang", workspace / "tinybert" / "lang")
    rows = workspace.parent / "rows"
    run = _launch([sys.executable], workspace, (model_dir, train, dev), rows)
    assert run.returncode == 0, run.stderr
    return workspace, _rows(rows, 0), (model_dir, train, dev)


def _check_like_single(workspace: Path, single_workspace: Path):
    ours, theirs = _weights(workspace), _weights(single_workspace)
    assert ours.keys() == theirs.keys()
    for name in ours:
        torch.testing.assert_close(ours[name], theirs[name], atol=2e-5, rtol=1e-4)
    assert not (workspace / "tinybert" / "task" / "ner-en.partial").exists()  # the run directory is gone
    assert sorted(p.name for p in (workspace / "tinybert" / "task").iterdir()) == ["ner-en"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "launcher",
    [
        ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"],
        ["-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--main_process_port", "PORT"],
    ],
    ids=["torchrun", "accelerate"],
)
def test_two_processes_share_each_batch_and_match_one(single_run, tmp_path, launcher):
    single_workspace, single_rows, data = single_run
    workspace = tmp_path / "ws"
    shutil.copytree(single_workspace / "tinybert" / "lang", workspace / "tinybert" / "lang")
    launcher = [str(_free_port()) if part == "PORT" else part for part in launcher]
    run = _launch([sys.executable, *launcher], workspace, data, tmp_path / "rows")
    assert run.returncode == 0, run.stderr
    first, second = _rows(tmp_path / "rows", 0), _rows(tmp_path / "rows", 1)
    assert len(first) == len(second) == len(single_rows)  # the same steps
    assert [a + b for a, b in zip(first, second)] == single_rows  # each process trains on its half
    assert all(abs(a - b) <= 1 for a, b in zip(first, second))
    _check_like_single(workspace, single_workspace)
    assert run.stderr.count("training adapter ner-en") == 1  # one process speaks


@pytest.mark.slow
def test_two_processes_adapt_the_encoder_as_one(trained_workspace, tmp_path):
    """The encoder itself trains under DDP (its weights, not an adapter's): two processes end where one ends."""
    root, model_dir, train, dev = trained_workspace
    pythonpath = os.pathsep.join(filter(None, [str(ENTRY.parent.parent), os.environ.get("PYTHONPATH")]))
    saved = {}
    for processes in (1, 2):
        rows, workspace = tmp_path / f"rows-{processes}", tmp_path / f"ws-{processes}"
        rows.mkdir()
        launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"] if processes == 2 else []
        command = [sys.executable, *launcher, str(ENTRY), "train-encoder", "qu", str(train), "--also", f"en={dev}"]
        command += ["-m", str(model_dir), "-w", str(workspace), "--seq-len", "32", "--batch-size", "8"]
        command += ["--steps", "6", "--eval-every", "3", "--lr", "1e-3", "--precision", "fp32", "--device", "cpu"]
        env = {**os.environ, "XLING_TEST_ROWS": str(rows), "PYTHONPATH": pythonpath}
        run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        saved[processes] = load_file(workspace / "tinybert" / "encoder" / "tinybert-qu" / "model.safetensors")
    assert saved[1].keys() == saved[2].keys()
    for name in saved[1]:
        torch.testing.assert_close(saved[2][name], saved[1][name], atol=2e-5, rtol=1e-4)
    layer = "bert.encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(saved[1][layer], load_file(model_dir / "model.safetensors")[layer.removeprefix("bert.")])


@pytest.mark.slow
def test_two_processes_resume_after_a_crash(single_run, tmp_path):
    single_workspace, _, data = single_run
    workspace = tmp_path / "ws"
    shutil.copytree(single_workspace / "tinybert" / "lang", workspace / "tinybert" / "lang")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    crashed = _launch(torchrun, workspace, data, tmp_path / "rows", crash_at=7)
    assert crashed.returncode != 0
    assert (workspace / "tinybert" / "task" / "ner-en.partial" / "checkpoint" / "state.json").is_file()
    resumed = _launch(torchrun, workspace, data, tmp_path / "rows-resumed")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stderr and "from step 4" in resumed.stderr
    _check_like_single(workspace, single_workspace)


@pytest.mark.slow
def test_every_process_computes_in_the_precision_the_first_process_picked(single_run, tmp_path):
    """auto times bf16 in each process; were that to come out differently, the processes would still agree."""
    single_workspace, _, data = single_run
    workspace = tmp_path / "ws"
    shutil.copytree(single_workspace / "tinybert" / "lang", workspace / "tinybert" / "lang")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    for speedups, picked in (("3.0,0.5", "bf16"), ("0.5,3.0", "fp32")):
        rows = tmp_path / f"rows-{picked}"
        run = _launch(torchrun, workspace, data, rows, precision="auto", bf16_speedups=speedups)
        assert run.returncode == 0, run.stderr
        for rank in (0, 1):
            assert set((rows / f"precision-{rank}.txt").read_text().split()) == {picked}
        shutil.rmtree(workspace / "tinybert" / "task")


def test_accelerate_launch_cpu_with_several_processes_says_what_works(tmp_path):
    run = run_xling("train-task", "ner", "--lang", "en", env={"ACCELERATE_USE_CPU": "True", "MASTER_ADDR": "127.0.0.1"})
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1
    assert "accelerate launch --multi_gpu --num_processes N" in run.stderr and "torchrun" in run.stderr


def test_more_processes_than_gpus_are_refused_in_one_line(monkeypatch):
    from xling.errors import XlingError
    from xling.train.processes import process_state

    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(XlingError, match=r"2 processes were started on a machine with 1 GPU\(s\).*--device cpu"):
        process_state("cuda")


def test_a_process_of_its_own_takes_each_runs_device():
    from accelerate import PartialState

    from xling.train.processes import process_state

    PartialState(cpu=False)  # as a run on a GPU leaves it
    assert process_state("cpu")._cpu  # accelerate alone would keep the first state, or refuse cpu=True
    assert not process_state("cpu").use_distributed
