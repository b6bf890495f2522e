"""An interrupted training run resumes exactly: Ctrl-C (SIGINT), SIGTERM and kill -9 each leave a checkpoint
whose rerun saves the same bytes as a run never interrupted, for train-lang, train-encoder, train-task and
self-train."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.tiny import run_xling

# fp32: `auto` picks by timing, and on a machine busy with other tests the runs compared could pick differently
# (a resumed run keeps its own run's precision: the last test)
STEPS = ["--steps", "40", "--batch-size", "4", "--checkpoint-every", "5", "--lr", "3e-3", "--seed", "3"]
STEPS += ["--precision", "fp32"]


def command(kind: str, model_dir: Path, train: Path, dev: Path, workspace: Path) -> tuple[list[str], Path]:
    """The command line, and the folder its adapter is saved to (its run folder is that name + .partial)."""
    where = ["--model", str(model_dir), "-w", str(workspace)]
    tasks, langs = workspace / model_dir.name / "task", workspace / model_dir.name / "lang"
    if kind == "train-lang":
        args = ["train-lang", "qu", str(train), "--name", "qu-sig", "--seq-len", "32", "--eval-every", "20"]
        return [*args, *STEPS, *where], langs / "qu-sig"
    if kind == "train-encoder":
        parallel = workspace.parent / "parallel"
        parallel.mkdir(exist_ok=True)
        (parallel / "pairs.es").write_text("".join(f"el río {i} de Lima\n" for i in range(30)))
        (parallel / "pairs.qu").write_text("".join(f"Lima llaqtapa mayun {i}\n" for i in range(30)))
        args = ["train-encoder", "qu", str(train), "--also", f"en={dev}", "--parallel", str(parallel)]
        args += ["--method", "lora", "--name", "qu-sig", "--seq-len", "32", "--eval-every", "20"]
        return [*args, *STEPS, *where], workspace / model_dir.name / "encoder" / "qu-sig"
    if kind == "train-task":
        args = ["train-task", "ner", "--lang", "en", "--train", str(train), "--dev", str(dev), "--name", "ner-sig"]
        return [*args, "--eval-every", "20", "--patience", "100", *STEPS, *where], tasks / "ner-sig"
    args = ["self-train", str(train), "--lang", "qu", "--dev", str(dev), "--rounds", "1", "--threshold", "0.05"]
    return [*args, "--max-sentences", "60", "--name", "ner-sig", *STEPS, *where], tasks / "ner-sig-round1"


def interrupted(args: list[str], run_dir: Path, number: int) -> subprocess.CompletedProcess:
    """Start the command, send `number` once its first checkpoint is written (the run is then mid-way), and
    wait for it to end."""
    process = subprocess.Popen(
        [sys.executable, "-m", "xling", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's foreground job has it
    )
    state = run_dir / "checkpoint" / "state.json"
    deadline = time.time() + 300
    while not state.exists() and process.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    assert process.poll() is None, process.communicate()[1][-2000:]
    process.send_signal(number)
    out, err = process.communicate(timeout=300)
    return subprocess.CompletedProcess(args, process.returncode, out, err)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["train-task", "train-lang", "train-encoder", "self-train"])
def test_every_signal_leaves_a_checkpoint_whose_rerun_saves_the_same_bytes(tmp_path, trained_workspace, kind):
    root, model_dir, train, dev = trained_workspace
    saved = {}
    for case in ("uninterrupted", "SIGINT", "SIGTERM", "SIGKILL"):
        workspace = tmp_path / case
        shutil.copytree(root / "ws", workspace)
        args, target = command(kind, model_dir, train, dev, workspace)
        if case != "uninterrupted":
            number = getattr(signal, case)
            stopped = interrupted(args, target.with_name(target.name + ".partial"), number)
            assert stopped.returncode in ({signal.SIGINT: 130, signal.SIGTERM: 143}.get(number), -signal.SIGKILL)
            if number != signal.SIGKILL:
                assert stopped.stderr.strip().splitlines()[-1].startswith("error: interrupted"), stopped.stderr[-500:]
            assert not target.exists()  # stopped before the end
        done = run_xling(*args)
        assert done.returncode == 0, done.stderr[-2000:]
        assert case == "uninterrupted" or "resuming" in done.stderr
        saved[case] = {f.name: f.read_bytes() for f in target.iterdir() if f.suffix == ".safetensors"}
        assert saved[case]
    for case in ("SIGINT", "SIGTERM", "SIGKILL"):
        assert saved[case] == saved["uninterrupted"], case


def test_a_resumed_run_keeps_the_precision_it_started_in_whatever_auto_would_pick_now(tmp_path, monkeypatch):
    """`auto` picks bf16 on a CPU by a measurement kept per machine; should it change between the interrupted run
    and its rerun (the cache cleared, another machine), the rerun goes on in the precision its run.json records."""
    from tests.test_language import Crash, _options, write_corpus
    from tests.tiny import save_tiny_model
    from xling import device
    from xling.train.language import train_language_adapter
    from xling.train.mlm import MaskedLMObjective

    model_dir = save_tiny_model("bert", tmp_path / "tinybert")
    corpus = write_corpus(tmp_path / "qu.txt")
    original = MaskedLMObjective.prepare

    def crashing(self, batch, step):
        if step == 7:
            raise Crash
        return original(self, batch, step)

    monkeypatch.setattr(device, "cpu_bf16_speedup", lambda: 10.0)  # bf16 measures faster: auto picks it
    monkeypatch.setattr(MaskedLMObjective, "prepare", crashing)
    with pytest.raises(Crash):
        train_language_adapter(_options(tmp_path, model_dir, corpus))
    run_record = next(tmp_path.rglob("*.partial")) / "run.json"
    assert json.loads(run_record.read_text())["computed_in"] == "bf16"  # what auto resolved to, in the record
    monkeypatch.setattr(MaskedLMObjective, "prepare", original)
    monkeypatch.setattr(device, "cpu_bf16_speedup", lambda: 0.5)  # now it measures slower: auto would pick fp32
    resumed = train_language_adapter(_options(tmp_path, model_dir, corpus))
    assert resumed.computed_in == "bf16"
    fresh = train_language_adapter(_options(tmp_path / "fresh", model_dir, corpus))
    assert fresh.computed_in == "fp32"  # a run started now picks by the timing
