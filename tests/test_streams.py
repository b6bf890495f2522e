"""Inputs and outputs that are not regular files, bounds read with the options, and the machine's own failures:
each is one line, and nothing is replaced that xling did not write. Commands that tag run through the embedded
model's own path (`models/light/`), with the adapters shipped with xling."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading

import pytest

from tests.tiny import run_xling

LINE = "Qusqu llaqtaqa Perú suyupi kachkan."


def tag(*args, **options) -> subprocess.CompletedProcess:
    """`xling tag --lang qu` with an empty workspace: the shipped adapters tag."""
    return run_xling("tag", "--lang", "qu", *args, **options)


def one_error_line(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if not line.startswith("xling: ")]  # the notice line
    assert done.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "unexpected" not in lines[0]
    return lines[0]


def test_tag_writes_onto_a_fifo_as_it_is_and_reads_one(tmp_path):
    fifo_out, fifo_in = tmp_path / "out.fifo", tmp_path / "in.fifo"
    os.mkfifo(fifo_out)
    os.mkfifo(fifo_in)
    read: list[str] = []
    reader = threading.Thread(target=lambda: read.append(fifo_out.read_text(encoding="utf-8")))
    writer = threading.Thread(target=lambda: fifo_in.write_text(LINE + "\n", encoding="utf-8"))
    reader.start()
    writer.start()
    done = tag(fifo_in, "-o", fifo_out, cwd=tmp_path, timeout=300)
    reader.join(10)
    writer.join(10)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(fifo_out.stat().st_mode)  # written into, not replaced by a file
    assert read == ["[Qusqu llaqtaqa](LOC) [Perú suyupi](LOC) kachkan.\n"]


def test_tag_reads_dev_stdin_and_a_closed_stdin_is_one_line(tmp_path):
    done = tag("/dev/stdin", input=LINE + "\n", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "[Qusqu llaqtaqa](LOC) [Perú suyupi](LOC) kachkan.\n", done.stderr
    closed = subprocess.run(
        [sys.executable, "-m", "xling", "tag", "--lang", "qu", "-"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        preexec_fn=lambda: os.close(0),  # `xling tag - <&-`
    )
    assert "standard input is closed" in one_error_line(closed)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_that_refuses_the_write_is_an_error_and_stays_a_device(tmp_path):
    full = tmp_path / "full"
    os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # the kernel's /dev/full, in the test's own folder
    (tmp_path / "in.txt").write_text(LINE + "\n", encoding="utf-8")
    for output_format in ("pretty", "jsonl", "conll"):  # the last two join blocks into a regular file
        done = tag(tmp_path / "in.txt", "-o", full, "--format", output_format, cwd=tmp_path)
        assert "No space left on device" in one_error_line(done) and "wrote" not in done.stderr
        assert stat.S_ISCHR(full.stat().st_mode) and sorted(os.listdir(tmp_path)) == ["full", "in.txt"]


def test_a_folder_name_too_long_and_bounds_are_refused_before_anything_loads(tmp_path):
    long = tmp_path / ("w" * 300)
    for args in (
        ["tag", "--lang", "qu", "-w", long, "-"],
        ["train-task", "ner", "--lang", "en", "--train", "x", "--dev", "y", "-w", long],
        ["tag", "--lang", "qu", "--batch-size", str(10**20), "-"],
        ["train-task", "ner", "--lang", "en", "--train", "x", "--dev", "y", "--steps", str(10**20)],
        ["train-task", "ner", "--lang", "en", "--train", "x", "--dev", "y", "--max-len", str(10**9)],
        ["train-task", "ner", "--lang", "en", "--train", "x", "--dev", "y", "--label-map", "LOC=B-X"],
        ["analyze", "errors", "x.conll", "--lang", "qu", "-o", "x.txt"],
    ):
        said = one_error_line(run_xling(*args, cwd=tmp_path, input=""))
        assert "not found" not in said, said  # refused for the bound, before any file is looked for
    assert "w" * 300 not in os.listdir(tmp_path)


def test_memory_exhausted_is_one_line_with_the_amount():
    import torch

    from xling.cli.app import system_error

    with pytest.raises(RuntimeError) as raised:  # torch's own words for an allocation the machine cannot meet
        torch.empty(2**44, dtype=torch.uint8)
    said = system_error(raised.value)
    assert said.startswith("out of memory (16,384.0 GiB asked for at once)"), said


def test_an_f1_of_no_entities_is_written_as_json_null(tmp_path):
    from xling.fileio import json_text, parse_json, write_json_atomic

    result = {"f1": float("nan"), "per_type": {"LOC": {"f1": float("inf")}}, "sentences": 3}
    assert parse_json(json_text(result)) == {"f1": None, "per_type": {"LOC": {"f1": None}}, "sentences": 3}
    write_json_atomic(tmp_path / "r.json", result)
    assert json.loads((tmp_path / "r.json").read_text())["f1"] is None


def test_a_lone_surrogate_in_json_is_refused():
    from xling.fileio import parse_json

    for text in ('{"annotator": "\\ud800"}', '["\\udfff"]', '{"\\ud800": 1}'):
        with pytest.raises(ValueError, match="lone UTF-16 surrogate"):
            parse_json(text)
    assert parse_json('"\\ud83d\\ude00"') == "\U0001f600"  # a pair is a character


def test_a_port_in_use_and_an_unknown_host_are_one_line(tmp_path):
    import socket

    from xling.web import check_address

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError):
            check_address("127.0.0.1", taken.getsockname()[1])
    with pytest.raises(OSError):
        check_address("no-such-host.invalid", 8321)


def test_a_project_output_that_is_a_file_is_one_line(tmp_path):
    from xling.errors import XlingError
    from xling.fileio import atomic_directory

    (tmp_path / "out").write_text("mine")
    with pytest.raises(XlingError, match="is a file, not a folder"):
        with atomic_directory(tmp_path / "out", overwrite=True, replaces=("report.json",)):
            pass
    assert (tmp_path / "out").read_text() == "mine"


def test_a_recipe_names_the_step_that_failed(tmp_path):
    (tmp_path / "text.txt").write_text("\n \n")  # no text: found when the step runs
    recipe = tmp_path / "r.toml"
    recipe.write_text(
        f'[recipe]\nname = "r"\nworkspace = "{tmp_path / "ws"}"\n\n[[step]]\ntitle = "lang-qu"\n'
        f'run = "train-lang"\nlang = "qu"\ncorpus = ["{tmp_path / "text.txt"}"]\n'
    )
    done = run_xling("run", recipe, cwd=tmp_path)
    assert done.returncode == 1 and "unexpected" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: step 1/1 lang-qu (train-lang) failed: the corpus is empty"), done.stderr


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB file system, filled to its last pages by the test (root only; skipped where mounting is refused)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)]).returncode
    ):
        pytest.skip("mounting a small file system needs root")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_a_full_disk_under_an_export_is_one_line_and_leaves_no_folder(small_disk, tmp_path):
    import shutil

    filler = small_disk / "filler"  # every page but two taken: the adapter's weights cannot fit
    filler.write_bytes(b"\0" * (shutil.disk_usage(small_disk).free - 8192))
    done = run_xling("export", "ner-en", small_disk / "ah", "--format", "adapterhub", cwd=tmp_path)
    said = one_error_line(done)
    assert said.startswith("error: the disk is full"), said
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]  # the staging folder is gone too


def test_a_line_too_long_to_be_one_result_is_refused_in_one_line_from_a_file_and_from_stdin(tmp_path, monkeypatch):
    from xling.data import conll
    from xling.data.conll import read_lines, whole_lines
    from xling.errors import XlingError

    monkeypatch.setattr(conll, "MAX_RECORD_CHARS", 50)
    small = tmp_path / "small.txt"
    small.write_text("Qusqu llaqta\n" + "runa " * 40 + "\n", encoding="utf-8")
    with pytest.raises(XlingError, match=r"small.txt, line 2: over 50 characters, and each line is tagged as one"):
        list(whole_lines(read_lines(small), str(small)))
    book = "runa " * (10_000_000 // 5 + 1)  # the real bound (the commands below run in processes of their own)
    (tmp_path / "book.txt").write_text(book + "\n", encoding="utf-8")
    for source, stdin in (("book.txt", None), ("-", book + "\n")):
        said = one_error_line(tag(source, cwd=tmp_path, input=stdin))
        assert "line 1: over 10,000,000 characters" in said and "break the text into lines" in said
