"""Probes of the whole tool as a new user and a hostile file would try it: damaged, huge or contradictory input to
each command, planted links, and malformed requests to `xling annotate`. A probe is good when the command finishes,
or refuses in one line `error: ...` that is not `error: unexpected ...`, within its time and memory, and writes
nothing outside its workspace; a request is good when it gets a reply that is not a 5xx. Prints the table and
writes it as JSON.

    python -m bench.probes [--out results/probes/probes.json]

The shipped adapters tag (no corpora needed); about two minutes on 2 cores. What a probe cannot set up here (a full
disk, an exported ONNX folder, Ctrl+C in training) is tested in `tests/` instead.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.common import REPO, parsed
from bench.recipe_validation import recipe_text
from xling.adapters.files import CONFIG_FILE

TIMEOUT = 120  # seconds for one command
BIG = str(2**64)  # beyond any seed
HUGE_INT = "1" + "0" * 4400  # beyond Python's int-digit limit
PEAK_MB = 500  # a command that loads no model stays under this (the bound for resampling and long lines)
MODEL_PEAK_MB = 2000  # one that loads the embedded model (torch's import alone is 0.6 GB with its CUDA build)
LOADING = ("tag", "adapters", "names", "seeds", "inputs", "outputs", "links", "run", "models")  # groups that load one


@dataclass
class Outcome:
    group: str
    probe: str
    good: bool
    said: str  # the refusal's line, the reply's status, or what went wrong
    seconds: float
    peak_mb: float


def run_command(args: list[str], folder: Path, stdin: str = "") -> tuple[int | None, str, float, float]:
    """`python -m xling ARGS` in `folder`: exit status (None: killed at the time bound), standard error, seconds,
    peak resident memory in MB (of this process alone, from wait4)."""
    err = folder / ".stderr"
    started = time.perf_counter()
    with open(err, "w") as err_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "xling", *args], cwd=folder, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=err_file,
        )  # fmt: skip
        process.stdin.write(stdin.encode())
        process.stdin.close()
        timer = threading.Timer(TIMEOUT, process.kill)
        timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        timer.cancel()
        # reaped here (wait4 gives its memory): Popen is told, so it never waits for it again
        process.returncode = code = os.waitstatus_to_exitcode(status)
    code = None if code < 0 else code  # killed by a signal: the time bound
    return code, err.read_text(errors="replace"), time.perf_counter() - started, usage.ru_maxrss / 1024


def judge(code: int | None, stderr: str, expect: str | None) -> tuple[bool, str]:
    lines = stderr.strip().splitlines()
    if code is None:
        return False, f"no end within {TIMEOUT} s"
    if code == 0:
        return expect is None, "done" if expect is None else f"done, where {expect!r} was expected"
    lines = [line for line in lines if not line.startswith(("xling: tagging with", "─"))]  # the notice, a step's rule
    first = lines[0] if lines else ""
    if code != 1 or len(lines) != 1 or not first.startswith("error:") or first.startswith("error: unexpected"):
        return False, f"exit {code}: {lines[-1][:160] if lines else 'nothing said'}"
    return expect is None or expect in first, first[:200]


def probe_commands(folder: Path) -> list[tuple[str, str, list[str], str | None, str]]:
    """(group, probe, arguments, the refusal expected or None for a finished command, standard input)."""
    ws, files = ["-w", str(folder / "ws")], make_files(folder)
    return [
        ("compare", "empty sentence_counts", ["compare", files["empty"], files["good"]], "is empty", ""),
        ("compare", "missing f1 (taken from counts)", ["compare", files["no_f1"], files["good"]], None, ""),
        ("compare", "a count of 10^30", ["compare", files["huge_count"], files["good"]], "whole numbers", ""),
        ("compare", "correct above predicted", ["compare", files["too_correct"], files["good"]], "more correct", ""),
        ("compare", "different sentences", ["compare", files["other"], files["good"]], "different sentences", ""),
        (
            "compare",
            "--samples 10^9",
            ["compare", files["good"], files["good"], "--samples", "1000000000"],
            "at most",
            "",
        ),  # fmt: skip
        (
            "compare",
            "--samples 100,000 on 10,000 sentences",
            ["compare", files["big"], files["big"], "--samples", "100000"],
            None,
            "",
        ),  # fmt: skip
        ("compare", "a 4,401-digit integer", ["compare", files["digits"], files["good"]], "digit", ""),
        ("compare", "NaN in a count", ["compare", files["nan"], files["good"]], "NaN", ""),
        (
            "evaluate",
            "--bootstrap 10^9",
            ["evaluate", files["conll"], "--lang", "qu", "--bootstrap", "1000000000"],
            "at most",
            "",
        ),  # fmt: skip
        ("overlap", "a 100 MB line", ["corpora", "overlap", files["long_line"], files["conll"]], None, ""),
        (
            "names",
            "--session of 300 letters",
            ["select", files["text"], "--lang", "qu", "--session", "a" * 300, *ws],
            "at most",
            "",
        ),  # fmt: skip
        (
            "names",
            "--name of 300 letters",
            [
                "train-task",
                "ner",
                "--lang",
                "qu",
                "--train",
                files["conll"],
                "--dev",
                files["conll"],
                "--name",
                "a" * 300,
                *ws,
            ],
            "at most",
            "",
        ),  # fmt: skip
        ("names", "tag -o of 250 bytes", ["tag", "-", "--lang", "qu", "-o", "b" * 250, *ws], "at most", "runa\n"),
        ("seeds", "--seed 2^64", ["select", files["text"], "--lang", "qu", "--seed", BIG, *ws], "seed", ""),
        ("recipes", "TOML nested 100,000 deep", ["run", files["toml_bomb"], "--dry-run"], "nested", ""),
        ("recipes", "5,000 steps, --dry-run", ["run", files["big_recipe"], "--dry-run"], None, ""),
        (
            "annotate",
            "--guidelines /dev/zero",
            ["annotate", "qu", "--guidelines", "/dev/zero", *ws],
            "1 MB",
            "",
        ),  # fmt: skip
        ("annotate", "--dev of a missing file", ["annotate", "qu", "--dev", "missing.conll", *ws], "missing", ""),
        (
            "adapters",
            "--no-lang-adapter --lang-adapter X",
            ["tag", "-", "--lang", "qu", "--no-lang-adapter", "--lang-adapter", "x", *ws],
            "contradict",
            "runa\n",
        ),  # fmt: skip
        (
            "adapters",
            "--fusion F -t X",
            ["tag", "-", "--lang", "qu", "--fusion", "f", "-t", "x", *ws],
            "contradict",
            "runa\n",
        ),  # fmt: skip
        (
            "adapters",
            "-t of an adapter that does not exist",
            ["tag", "-", "--lang", "qu", "-t", "nowhere", *ws],
            "no task adapter",
            "runa\n",
        ),  # fmt: skip
        (
            "adapters",
            "a task adapter's record with a 4,401-digit integer",
            ["tag", "-", "--lang", "qu", "-t", files["damaged_adapter"], *ws],
            "digit",
            "runa\n",
        ),  # fmt: skip
        ("tag", "the shipped adapters on one line", ["tag", "-", "--lang", "qu", *ws], None, "Qusqu llaqtaqa.\n"),
    ]


def streams_and_bounds(folder: Path) -> list[tuple[str, str, list[str], str | None, str]]:
    """Inputs and outputs that are no regular files, bounds, adapters of the wrong kind, a failing recipe step."""
    ws, long = ["-w", str(folder / "ws")], str(folder / ("w" * 300))
    for fifo, side in (("in.fifo", "w"), ("out.fifo", "r")):  # the other end, as a shell's pipe would hold it
        os.mkfifo(folder / fifo)
        threading.Thread(target=_fifo_end, args=(folder / fifo, side), daemon=True).start()
    task = ["train-task", "ner", "--lang", "qu", "--train", "qu.conll", "--dev", "qu.conll", *ws]
    probes = [
        ("inputs", "/dev/null", ["tag", "/dev/null", "--lang", "qu", *ws], None, ""),
        ("inputs", "a FIFO", ["tag", "in.fifo", "--lang", "qu", *ws], None, ""),
        ("inputs", "/dev/stdin", ["tag", "/dev/stdin", "--lang", "qu", *ws], None, "Qusqu llaqta\n"),
        ("outputs", "tag -o onto a FIFO", ["tag", "-", "--lang", "qu", "-o", "out.fifo", *ws], None, "runa\n"),
        ("outputs", "analyze -o x.txt", ["analyze", "errors", "qu.conll", "--lang", "qu", "-o", "x.txt"], "plot", ""),
        ("names", "-w of 300 letters (tag)", ["tag", "-", "--lang", "qu", "-w", long], "255 bytes", "runa\n"),
        ("names", "-w of 300 letters (train-task)", [*task, "-w", long], "255 bytes", ""),
        ("bounds", "--batch-size 10^20", ["tag", "-", "--lang", "qu", "--batch-size", "1" + "0" * 20, *ws], "at most", ""),
        ("bounds", "--steps 10^20", [*task, "--steps", "1" + "0" * 20], "at most", ""),
        ("bounds", "--max-len 10^9", [*task, "--max-len", "1000000000"], "at most", ""),
        ("bounds", "--label-map LOC=B-X", [*task, "--label-map", "LOC=B-X"], "entity types", ""),
        ("adapters", "xling_adapter.json with auto_map", ["tag", "-", "--lang", "qu", "-t", foreign_keys(folder), *ws],
         "does not write", "runa\n"),
        ("adapters", "--lang-adapter given a task adapter", ["tag", "-", "--lang", "qu", "--lang-adapter", shipped_task(), *ws],
         "not a language adapter", "runa\n"),
        ("projection", "-o onto an existing file", ["project", "qu.txt", "-o", "qu.conll", "--overwrite"], "is a file", ""),
        ("projection", "-o below a file", ["project", "qu.txt", "-o", "qu.conll/silver"], "is a file", ""),
        ("run", "a failing step is named", ["run", failing_recipe(folder)], "step 1/1 lang-qu (train-lang) failed", ""),
    ]  # fmt: skip
    if os.geteuid() == 0:  # a device node of the kernel's /dev/full, in the probes' own folder
        os.mknod(folder / "full", 0o20666, os.makedev(1, 7))
        probes.append(("outputs", "tag -o onto a full device", ["tag", "-", "--lang", "qu", "-o", "full", *ws],
                       "No space left", "runa\n"))  # fmt: skip
        probes.append(("outputs", "tag FILE -o onto a full device, jsonl (no .parts)",
                       ["tag", "qu.txt", "--lang", "qu", "-o", "full", "--format", "jsonl", *ws], "No space left", ""))  # fmt: skip
    return probes + model_folders(folder) + carried_labels(folder)


def model_folders(folder: Path) -> list[tuple[str, str, list[str], str | None, str]]:
    """-m given a model folder broken each way a copied or half-downloaded one comes; and train-encoder restricting
    its vocabulary over a mix of sources, on the whole one. The folders are made in a process of their own: torch
    imported here would count in every probe's peak memory (a child inherits its parent's peak)."""
    made = "import json, sys; from pathlib import Path; from tests.tiny import damaged_model_folders as d; "
    made += "w, b = d(Path(sys.argv[1])); print(json.dumps([str(w), [[str(p), s] for p, s in b]]))"
    done = subprocess.run(
        [sys.executable, "-c", made, str(folder / "models")], capture_output=True, text=True, check=True
    )
    whole, broken = json.loads(done.stdout.strip().splitlines()[-1])
    (folder / "mix.txt").write_text("".join(f"Qusqu llaqtapi {i} runakuna tiyanku.\n" for i in range(400)))
    ws = ["-w", str(folder / "ws"), "--steps", "1"]
    probes = [("models", f"-m {Path(path).name}", ["train-lang", "qu", "qu.txt", "-m", path, *ws], said, "")
              for path, said in broken]  # fmt: skip
    mixed = ["train-encoder", "qu", "mix.txt", "--also", "en=mix.txt", "--vocab-from-corpus", "--seq-len", "32"]
    return probes + [("models", "train-encoder --vocab-from-corpus on a mix", [*mixed, "-m", whole, *ws], None, "")]


def carried_labels(folder: Path) -> list[tuple[str, str, list[str], str | None, str]]:
    """xling translate and match given no lexicon, a broken one, or a share out of range."""
    (folder / "bad.tsv").write_text("casa wasi\n", encoding="utf-8")
    return [
        ("projection", "translate without a lexicon", ["translate", "qu.conll", "-o", "tr"], "give a bilingual lexicon", ""),
        ("projection", "translate with a line without a tab", ["translate", "qu.conll", "--lexicon", "bad.tsv", "-o", "tr"],
         "give SOURCE<TAB>TARGET", ""),
        ("projection", "match --min-share 2", ["match", "qu.txt", "--entities", "qu.conll", "--lang", "qu",
                                               "--min-share", "2", "-o", "m"], "between 0 and 1", ""),
        ("projection", "match --suffixes with a hyphen", ["match", "qu.txt", "--entities", "qu.conll", "--lang", "qu",
                                                          "--suffixes", "p-i", "-o", "m"], "letters only", ""),
    ]  # fmt: skip


def _fifo_end(fifo: Path, side: str) -> None:
    with open(fifo, side) as end:
        end.write("Qusqu llaqta\n") if side == "w" else end.read()


def shipped_task() -> str:
    from xling.models import model_label
    from xling.models.loading import DEFAULT_MODEL
    from xling.pretrained import pretrained_dir

    return str(pretrained_dir(model_label(DEFAULT_MODEL)) / "task" / "ner-en")


def foreign_keys(folder: Path) -> str:
    """A copy of the shipped `ner-en` whose record asks for code of its own (`auto_map`, `trust_remote_code`)."""
    import shutil

    copy = folder / "foreign-ner"
    shutil.copytree(shipped_task(), copy)
    (copy / "pretrained.json").unlink()
    config = copy / CONFIG_FILE
    record = json.loads(config.read_text()) | {"auto_map": {"AutoModel": "x.Y"}, "trust_remote_code": True}
    config.write_text(json.dumps(record))
    return f"./{copy.name}"


def failing_recipe(folder: Path) -> str:
    (folder / "blank.txt").write_text("\n \n")
    text = f'[recipe]\nname = "failing"\nworkspace = "{folder / "ws"}"\n\n[[step]]\ntitle = "lang-qu"\n'
    (folder / "failing.toml").write_text(text + 'run = "train-lang"\nlang = "qu"\ncorpus = ["blank.txt"]\n')
    return "failing.toml"


def make_files(folder: Path) -> dict[str, str]:
    """The probes' input files, written into `folder`."""
    counts = [[1, 1, 1], [0, 1, 1], [2, 2, 3]]

    def result(name: str, **change) -> str:
        record = {"sentences_digest": "d1", "f1": 0.5, "sentence_counts": counts} | change
        (folder / name).write_text(json.dumps(record))
        return name

    files = {
        "good": result("good.json"),
        "empty": result("empty.json", sentence_counts=[]),
        "huge_count": result("huge.json", sentence_counts=[[10**30, 10**30, 10**30], *counts[1:]]),
        "too_correct": result("correct.json", sentence_counts=[[5, 1, 1], *counts[1:]]),
        "other": result("other.json", sentences_digest="d2"),
        "big": result("big.json", sentence_counts=[[1, 2, 2]] * 10_000),
    }
    record = json.loads((folder / "good.json").read_text())
    del record["f1"]
    (folder / "no_f1.json").write_text(json.dumps(record))
    (folder / "digits.json").write_text(f'{{"sentences_digest": "d1", "sentence_counts": [[{HUGE_INT}, 1, 1]]}}')
    (folder / "nan.json").write_text('{"sentences_digest": "d1", "sentence_counts": [[NaN, 1, 1]]}')
    (folder / "qu.conll").write_text("Qusqu\tB-LOC\nllaqtaqa\tO\n\nRuna\tO\nrimay\tO\n\n")
    (folder / "qu.txt").write_text("Qusqu llaqtaqa Perú suyupi kachkan .\nLima llaqtaqa hatun llaqtam .\n")
    with open(folder / "line.txt", "w") as line:
        for _ in range(1000):  # 100 MB, no line break
            line.write("runa " * 20_000)
    (folder / "bomb.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    (folder / "big.toml").write_text(recipe_text(5000, folder))
    (folder / "x.txt").write_text("Qusqu llaqta\n")
    (folder / "d.conll").write_text("Qusqu B-LOC\nllaqta O\n\n")
    files |= {"no_f1": "no_f1.json", "digits": "digits.json", "nan": "nan.json", "conll": "qu.conll"}
    files |= {"text": "qu.txt", "long_line": "line.txt", "toml_bomb": "bomb.toml", "big_recipe": "big.toml"}
    files["damaged_adapter"] = damaged_adapter(folder)
    return files


def damaged_adapter(folder: Path) -> str:
    """A copy of the shipped `ner-en` whose head record holds an integer past the digit limit."""
    import shutil

    from xling.models import model_label
    from xling.models.loading import DEFAULT_MODEL
    from xling.pretrained import pretrained_dir

    copy = folder / "damaged-ner"
    shutil.copytree(pretrained_dir(model_label(DEFAULT_MODEL)) / "task" / "ner-en", copy)
    config = copy / "head_config.json"
    config.write_text(config.read_text().replace("{", f'{{"damaged": {HUGE_INT}, ', 1))
    return f"./{copy.name}"


def session_folder(workspace: Path, name: str = "qu") -> Path:
    from xling.annotation.session import session_dir
    from xling.models.loading import DEFAULT_MODEL
    from xling.workspace import Workspace

    return session_dir(Workspace(str(workspace), DEFAULT_MODEL), name)


def damaged_sessions(folder: Path) -> list[tuple[str, str, list[str], str | None, str]]:
    """Copies of the probes' session, each with one damaged or planted file, and `xling annotate` on each."""
    import shutil

    from xling.annotation.batches import BATCHES

    damages = {
        "answers.jsonl line [1]": ("answers.jsonl", "[1]\n", "answers.jsonl:1:"),
        "answers.jsonl line {}": ("answers.jsonl", "{}\n", "answers.jsonl:1:"),
        "an empty batch file": (f"{BATCHES}/0001.jsonl", "", "0001.jsonl"),
        "a batch line with an extra key": (f"{BATCHES}/0001.jsonl", None, "0001.jsonl"),
        "answers.jsonl a link out of the workspace": ("answers.jsonl", "link", "symbolic link"),
    }
    probes = []
    for number, (probe, (file, text, expect)) in enumerate(damages.items()):
        workspace = folder / f"damaged-{number}"
        shutil.copytree(folder / "ws", workspace)
        target = session_folder(workspace) / file
        if text == "link":
            (folder / "victim.jsonl").write_text("")
            target.symlink_to(folder / "victim.jsonl")
        elif text is None:
            header, first, *rest = target.read_text().splitlines()
            target.write_text("\n".join([header, json.dumps(json.loads(first) | {"extra": 1}), *rest]) + "\n")
        else:
            target.write_text(text)
        probes.append(("annotate", probe, ["annotate", "qu", "-w", str(workspace), "--no-retrain"], expect, ""))
    return probes


def linked_recipe(folder: Path) -> tuple[str, str, list[str], str | None, str]:
    """A recipe whose tag output goes through a folder linked out of the workspace."""
    from xling.models import model_label
    from xling.models.loading import DEFAULT_MODEL

    text = f'[recipe]\nname = "linked"\nworkspace = "{folder / "ws"}"\n\n[[step]]\ntitle = "tagged"\nrun = "tag"\n'
    (folder / "linked.toml").write_text(text + 'input = "qu.txt"\nlang = "qu"\noutput = "sub/tags.jsonl"\n')
    results = folder / "ws" / model_label(DEFAULT_MODEL) / "results" / "linked"
    results.mkdir(parents=True, exist_ok=True)
    (folder / "outside").mkdir()
    (results / "sub").symlink_to(folder / "outside")
    return "links", "a recipe's output through a linked folder", ["run", "linked.toml"], "symbolic link", ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(workspace: Path, session: str) -> tuple[subprocess.Popen, str]:
    """`xling annotate SESSION` on a free port, once it answers, and its address."""
    port = free_port()
    command = [sys.executable, "-m", "xling", "annotate", session, "-w", str(workspace), "--port", str(port)]
    command += ["--no-retrain", "--annotator", "Ana"]  # a one-person session: a body is judged, not its sender
    server = subprocess.Popen(command, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    address = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(address + "/api/state", timeout=1)
            return server, address
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise SystemExit(f"xling annotate {session} did not start")


def request(address: str, path: str, body: bytes | None, headers: dict) -> tuple[int | None, str]:
    """The reply's status (None: no reply within 10 s) and its first 200 characters."""
    ask = urllib.request.Request(address + path, data=body, headers={"Content-Type": "application/json"} | headers)
    try:
        with urllib.request.urlopen(ask, timeout=10) as reply:
            return reply.status, reply.read(200).decode(errors="replace")
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read(200).decode(errors="replace")
    except OSError as failed:
        return None, str(failed)


def probe_server(folder: Path) -> list[Outcome]:
    """Malformed requests to `xling annotate` over HTTP, on a session with a damaged round line and an empty
    page-token file (which must be made anew, not turn the check off)."""
    directory = session_folder(folder / "ws")
    (directory / "rounds.jsonl").write_text('{"round": 1, "state": \n')
    (directory / "page-token").write_text("")
    (directory / "claims.jsonl").write_text('{"item": "x", "annotator": "Ana", "time": "soon"}\n[1]\n')
    server, address = serve(folder / "ws", "qu")
    token = {"X-Xling-Page-Token": (directory / "page-token").read_text().strip()}
    answers = directory / "answers.jsonl"
    before = answers.read_text() if answers.exists() else ""
    big = b'{"item": "x", "spans": [], "judged": ' + HUGE_INT.encode() + b"}"
    requests = [
        ("the page loads with a damaged round line", "/api/state", None, {}, {200}),
        ("adjudicate [1]", "/api/adjudicate", b"[1]", token, {400}),
        ("adjudicate an unhashable item", "/api/adjudicate", b'{"item": [1], "spans": []}', token, {400}),
        ("answer with a 4,401-digit number", "/api/answer", big, token, {400}),
        ("undo [1]", "/api/undo", b"[1]", token, {400}),
        ("answer nested 50,000 deep", "/api/answer", b"[" * 50_000, token, {400}),
        ("answer with an empty page token", "/api/answer", b'{"item": "x"}', {"X-Xling-Page-Token": ""}, {403}),
        ("another Host", "/api/state", None, {"Host": "attacker.example"}, {403}),
        ("the page loads with damaged claims.jsonl lines", "/api/state", None, {}, {200}),
    ] + [
        (f"a lone surrogate in an answer's {key}", "/api/answer", surrogate(key), token, {400})
        for key in ("annotator", "id", "tab")
    ]
    outcomes = []
    try:
        for probe, path, body, headers, expected in requests:
            started = time.perf_counter()
            status, text = request(address, path, body, headers)
            good = status in expected
            outcomes.append(
                Outcome("server", probe, good, f"{status} {text.strip()[:120]}", time.perf_counter() - started, 0)
            )
        outcomes += taken_address(folder, address)
    finally:
        server.terminate()
        server.wait()
    after = answers.read_text() if answers.exists() else ""
    outcomes.append(Outcome("server", "no answer written or withdrawn by those", after == before, "", 0, 0))
    return outcomes + probe_download(folder)


def surrogate(key: str) -> bytes:
    body = {"item": "x", "spans": [], "judged": None, key: "SURROGATE"}
    return json.dumps(body).replace("SURROGATE", "\\ud800").encode()


def taken_address(folder: Path, address: str) -> list[Outcome]:
    """`xling annotate` on the port another server holds, and on a host no resolver knows: one line each."""
    port = address.rsplit(":", 1)[1]
    return [
        probe("server", f"xling annotate {what}", ["annotate", "会话ñ", "-w", "ws", *where], "cannot serve", "", folder)
        for what, where in (("on a port in use", ["--port", port]), ("--host no-such-host.invalid",
                            ["--host", "no-such-host.invalid", "--token", "t"]))
    ]  # fmt: skip


def probe_download(folder: Path) -> list[Outcome]:
    """The gold download of a session named `会话ñ` (its header carries an RFC 5987 `filename*`)."""
    server, address = serve(folder / "ws", "会话ñ")
    try:
        ask = urllib.request.Request(address + "/api/gold.conll")
        with urllib.request.urlopen(ask, timeout=10) as reply:
            good, said = reply.status == 200, reply.headers.get("Content-Disposition", "")
    except OSError as failed:
        good, said = False, str(failed)
    finally:
        server.terminate()
        server.wait()
    return [Outcome("server", "gold.conll of session 会话ñ", good and "filename*=" in said, said, 0, 0)]


def probe(group: str, name: str, args: list[str], expect: str | None, stdin: str, folder: Path) -> Outcome:
    code, stderr, seconds, peak = run_command(args, folder, stdin)
    good, said = judge(code, stderr.replace(str(folder), "."), expect)  # the same table from any folder
    bound = MODEL_PEAK_MB if group in LOADING else PEAK_MB
    if peak > bound:
        good, said = False, f"peak {peak:.0f} MB over {bound} MB; {said}"
    return Outcome(group, name, good, said, seconds, peak)


def prepare(folder: Path) -> None:
    """Two sessions made as a user makes them: `xling select` with the shipped adapters."""
    (folder / "corpus.txt").write_text(
        "Qusqu llaqtaqa Perú suyupi kachkan .\nLima llaqtaqa hatun llaqtam .\nMaría Arguedas runasimita rimarqan .\n"
    )
    for session in ("qu", "会话ñ"):
        args = ["select", "corpus.txt", "--lang", "qu", "--size", "3", "--session", session, "-w", str(folder / "ws")]
        code, stderr, _, _ = run_command(args, folder)
        if code != 0:
            raise SystemExit(f"xling {' '.join(args)} failed: {stderr}")


def line(outcome: Outcome) -> str:
    measured = f" ({outcome.seconds:.1f} s, {outcome.peak_mb:.0f} MB)" if outcome.peak_mb else ""
    return f"{'good' if outcome.good else 'BAD '} {outcome.group}: {outcome.probe}{measured}: {outcome.said[:90]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/probes/probes.json", help="where the JSON goes")
    parser.add_argument("--groups", help="only these groups of probes, comma-separated (`server`: the HTTP ones)")
    smoke_out = Path(tempfile.gettempdir()) / "xling-smoke" / "probes.json"
    args = parsed(parser, {"out": str(smoke_out), "groups": "names"})
    chosen = set(args.groups.split(",")) if args.groups else None
    outcomes = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        prepare(folder)
        probes = [*probe_commands(folder), *damaged_sessions(folder), linked_recipe(folder)]
        probes += streams_and_bounds(folder)
        probes = [p for p in probes if chosen is None or p[0] in chosen]
        for group, probe_name, arguments, expect, stdin in probes:
            outcomes.append(probe(group, probe_name, arguments, expect, stdin, folder))
            print(line(outcomes[-1]))
        untouched = not list((folder / "outside").iterdir()) and not (folder / "victim.jsonl").read_text()
        outcomes.append(Outcome("links", "nothing written outside the workspace", untouched, "", 0, 0))
        if chosen is None or "server" in chosen:
            outcomes += probe_server(folder)
    bad = [o for o in outcomes if not o.good]
    for outcome in outcomes[len(probes) :]:
        print(line(outcome))
    print(f"{len(outcomes) - len(bad)} good, {len(bad)} bad of {len(outcomes)} probes")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    from xling.provenance import made_where

    # what a refusal says of a file in this checkout, named from the repository's root, not this machine's
    said = [asdict(o) | {"said": o.said.replace(f"{REPO}/", "")} for o in outcomes]
    record = made_where() | {"probes": len(outcomes), "bad": len(bad), "outcomes": said}
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
