"""`xling tag` into a file goes block by block: two processes (torchrun) give the output of one, line for line,
and a stopped run goes on from its written blocks without tagging them again."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from tests.tiny import run_xling
from xling.tagging.blocks import BLOCK, Launch, blocks, job_of, parts_dir, prepare_parts, tag_blocks
from xling.tagging.options import TagOptions
from xling.tagging.spec import TaggerSpec

LINES = ["juan lima the city", "maria of peru . runa wasi qusqu", "", "qusqu llaqta , peru suyu", "the city of lima"]


def corpus(path, blocks_wanted: float = 2.5):
    count = int(BLOCK * blocks_wanted)
    path.write_text("".join(f"{LINES[i % len(LINES)]} {i}\n" for i in range(count)), encoding="utf-8")
    return path, count


def where(trained_workspace) -> list[str]:
    root, model_dir, _, _ = trained_workspace
    return ["--model", str(model_dir), "-w", str(root / "ws")]


def started_job(trained_workspace, source, output) -> tuple[TagOptions, object]:
    """`xling tag SOURCE --lang qu -o OUTPUT`'s options and its parts folder, made as the command makes it."""
    root, model_dir, _, _ = trained_workspace
    spec = TaggerSpec(lang="qu", model=str(model_dir), workspace=str(root / "ws"))
    options = TagOptions(input=str(source), output=str(output), tagger=spec)
    folder = parts_dir(output)
    prepare_parts(folder, job_of(options, source))
    return options, folder


@pytest.mark.slow
def test_two_processes_write_what_one_writes_line_for_line(trained_workspace, tmp_path):
    source, count = corpus(tmp_path / "in.txt")
    one = run_xling("tag", source, "--lang", "qu", "-o", tmp_path / "one.jsonl", *where(trained_workspace))
    assert one.returncode == 0, one.stderr
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "xling"]
    two = subprocess.run(
        [*launcher, "tag", source, "--lang", "qu", "-o", tmp_path / "two.jsonl", *where(trained_workspace)],
        capture_output=True,
        text=True,
    )
    assert two.returncode == 0, two.stderr
    first, second = (tmp_path / "one.jsonl").read_text().splitlines(), (tmp_path / "two.jsonl").read_text().splitlines()
    assert len(first) == count and first == second
    assert [json.loads(line)["text"] for line in second] == source.read_text().splitlines()
    assert [json.loads(line)["line"] for line in second] == list(range(1, count + 1))  # across blocks too
    assert not parts_dir(tmp_path / "two.jsonl").exists()


@pytest.mark.slow
def test_a_stopped_run_tags_only_its_missing_blocks(trained_workspace, tmp_path):
    from xling import Tagger

    source, count = corpus(tmp_path / "in.txt")
    output = tmp_path / "out.jsonl"
    options, folder = started_job(trained_workspace, source, output)
    tagger = Tagger.load(options.tagger)
    tag_blocks(tagger, options, source, folder, Launch(rank=0, world=2))  # as if stopped with blocks 0 and 2 done
    written = sorted(p.name for p in folder.glob("*.jsonl"))
    assert written == ["00000000.jsonl", "00000002.jsonl"]
    (folder / "00000000.jsonl").write_text('{"text": "marker"}\n')  # a block tagged again would lose this
    done = run_xling("tag", source, "--lang", "qu", "-o", output, *where(trained_workspace))
    assert done.returncode == 0, done.stderr
    lines = output.read_text().splitlines()
    assert lines[0] == '{"text": "marker"}' and len(lines) == 1 + count - BLOCK
    assert [json.loads(line)["text"] for line in lines[1:]] == source.read_text().splitlines()[BLOCK:]


@pytest.mark.slow
@pytest.mark.parametrize("other", ["another input", "another precision"])
def test_parts_of_another_job_are_not_reused(trained_workspace, tmp_path, other):
    root, model_dir, _, _ = trained_workspace
    source, _ = corpus(tmp_path / "in.txt", 1.2)
    output = tmp_path / "out.jsonl"
    folder = parts_dir(output)
    spec = TaggerSpec(lang="qu", model=str(model_dir), workspace=str(root / "ws"))
    job = job_of(TagOptions(input=str(source), output=str(output), tagger=spec), source)
    assert job.precision in ("fp32", "bf16")  # auto, resolved as the tagger resolves it
    flipped = {"fp32": "bf16", "bf16": "fp32"}[job.precision]  # what a resumed run must never mix in
    prepare_parts(
        folder, replace(job, input="another") if other == "another input" else replace(job, precision=flipped)
    )
    (folder / "00000000.jsonl").write_text('{"text": "stale"}\n')
    (folder / "00000000.json").write_text('{"results": 1, "entities": 0}')
    done = run_xling("tag", source, "--lang", "qu", "-o", output, *where(trained_workspace))
    assert done.returncode == 0, done.stderr
    assert "stale" not in output.read_text() and len(output.read_text().splitlines()) == int(BLOCK * 1.2)


def test_blocks_cut_a_stream_in_order():
    assert list(blocks(range(5), 2)) == [[0, 1], [2, 3], [4]]


def test_several_processes_need_files_in_a_format_that_joins(trained_workspace, tmp_path):
    source, _ = corpus(tmp_path / "in.txt", 0.01)
    for extra, expected in (([], "not standard streams"), (["-o", tmp_path / "o.html"], "writes jsonl or conll")):
        done = run_xling("tag", source, "--lang", "qu", *extra, *where(trained_workspace), env={"WORLD_SIZE": "2"})
        assert done.returncode != 0 and expected in done.stderr and "Traceback" not in done.stderr


def test_a_folder_xling_did_not_write_is_never_removed(trained_workspace, tmp_path):
    source, _ = corpus(tmp_path / "in.txt", 0.01)
    mine = parts_dir(tmp_path / "out.jsonl")
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    done = run_xling("tag", source, "--lang", "qu", "-o", tmp_path / "out.jsonl", *where(trained_workspace))
    assert done.returncode != 0 and "is not xling's" in done.stderr and (mine / "notes.txt").read_text() == "keep"


def test_a_parts_folder_that_is_a_link_is_refused_before_anything_runs(trained_workspace, tmp_path):
    source, _ = corpus(tmp_path / "in.txt", 0.01)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "job.json").write_text("{}")  # another job's parts, by its record
    parts_dir(tmp_path / "out.jsonl").symlink_to(elsewhere)
    done = run_xling("tag", source, "--lang", "qu", "-o", tmp_path / "out.jsonl", *where(trained_workspace))
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "out.jsonl.parts is a symbolic link, which xling does not write through" in done.stderr
    assert sorted(p.name for p in elsewhere.iterdir()) == ["job.json"] and not (tmp_path / "out.jsonl").exists()


def test_a_damaged_block_count_says_which_files_to_remove_and_the_rerun_finishes(trained_workspace, tmp_path):
    source, count = corpus(tmp_path / "in.txt", 0.01)
    output = tmp_path / "out.jsonl"
    _, folder = started_job(trained_workspace, source, output)
    (folder / "00000000.jsonl").write_text("half a blo")
    (folder / "00000000.json").write_text('{"results": ')  # a block's counts, cut
    done = run_xling("tag", source, "--lang", "qu", "-o", output, *where(trained_workspace))
    error = done.stderr.strip().splitlines()[-1]  # after the line that says which adapters tag
    assert done.returncode == 1 and error.startswith("error: ") and "Traceback" not in done.stderr, done.stderr
    assert "00000000.json is not valid JSON" in error and "remove it and 00000000.jsonl, then run the same" in error
    for name in ("00000000.json", "00000000.jsonl"):
        (folder / name).unlink()
    again = run_xling("tag", source, "--lang", "qu", "-o", output, *where(trained_workspace))
    assert again.returncode == 0, again.stderr
    assert len(output.read_text().splitlines()) == count and not folder.exists()


@pytest.mark.slow
def test_a_job_killed_mid_run_and_resumed_writes_the_bytes_an_uninterrupted_one_writes(trained_workspace, tmp_path):
    import signal
    import time

    source, _ = corpus(tmp_path / "in.txt", 6)
    whole = run_xling("tag", source, "--lang", "qu", "-o", tmp_path / "whole.jsonl", *where(trained_workspace))
    assert whole.returncode == 0, whole.stderr
    output = tmp_path / "resumed.jsonl"
    command = [sys.executable, "-m", "xling", "tag", str(source), "--lang", "qu", "-o", str(output)]
    started = subprocess.Popen([*command, *where(trained_workspace)], stderr=subprocess.DEVNULL)
    parts = parts_dir(output)
    deadline = time.monotonic() + 120
    while not list(parts.glob("*.jsonl")) and started.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    started.send_signal(signal.SIGKILL)  # as a machine that goes down: no handler runs
    started.wait(30)
    assert list(parts.glob("*.jsonl")) and not output.exists()  # stopped between its first block and its last
    resumed = run_xling("tag", source, "--lang", "qu", "-o", output, *where(trained_workspace))
    assert resumed.returncode == 0, resumed.stderr
    assert output.read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
