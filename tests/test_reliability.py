"""Hostile but realistic input: every bad input is one line and a non-zero exit, nothing outside the workspace
changes, no two runs share a name, and a damaged file or run is named with what to do."""

from __future__ import annotations

import errno
import importlib
import json
import os
import re
import sys

import pytest
import torch

from tests.tiny import run_xling


def one_line_error(run, *expected: str) -> None:
    """Exit 1, nothing on stdout, no traceback, and the last line on stderr the one error line, holding every
    `expected` text (what the command said of its work before it stopped may come first)."""
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1, run.stderr
    assert [line for line in lines if line.startswith("error: ")] == lines[-1:], run.stderr
    assert all(text in lines[-1] for text in expected) and "Traceback" not in run.stderr, run.stderr
    assert run.stdout == ""


def snapshot(folder) -> dict:
    """Every file under `folder` with its content: what must not change."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ---- recipes: names and outputs stay inside the workspace ------------------------------------------


def recipe_file(tmp_path, model_dir, body: str, head: str = ""):
    path = tmp_path / "r.toml"
    top, body = (body, "") if body.startswith("step =") else ("", body)  # a top-level key goes before the tables
    workspace = tmp_path / "ws"
    path.write_text(f'{top}[recipe]\nname = "r"\nmodel = "{model_dir}"\nworkspace = "{workspace}"\n{head}\n{body}')
    return path


EVALUATE = '[[step]]\ntitle = "TITLE"\nrun = "evaluate"\ndata = "DEV"\nlang = "en"\ntask_adapter = "ner-en"\n'


@pytest.mark.parametrize(
    "body, head, message",
    [
        (EVALUATE.replace("TITLE", "../../../victim"), "", "step title '../../../victim' must be text without '/'"),
        (EVALUATE.replace("TITLE", "same") * 2, "", "step titles must differ (each names a result file): same"),
        (EVALUATE.replace("TITLE", "results"), "", "step title 'results' is the name of the recipe's own result"),
        (EVALUATE.replace("TITLE", "t"), "", None),  # the name below
        (
            '[[step]]\ntitle = "t"\nrun = "tag"\ninput = "DEV"\nlang = "en"\noutput = "../../../escape-out.jsonl"\n',
            "",
            "key 'output' of step 't' '../../../escape-out.jsonl' must be a path inside",
        ),
        ('[[step]]\ntitle = "t"\nrun = "tag"\ninput = "DEV"\nlang = "en"\noutput = "/tmp/x.jsonl"\n', "", "inside"),
        ('[[step]]\ntitle = "t"\nrun = "train-lang"\nlang = 7\ncorpus = ["DEV"]\n', "", "'lang' takes text, not 7"),
        ('[[step]]\ntitle = "t"\nrun = "tag"\ninput = "DEV"\nlang = "qu"\nconll = "yes"\n', "", "'conll' takes true"),
        ('[[step]]\ntitle = "t"\nrun = "evaluate"\ndata = "DEV"\nlang = "qu"\nlimit = -3\n', "", "limit must be at"),
        ("step = 5\n", "", "`step` must be a list of tables"),
    ],
)
def test_a_bad_recipe_is_refused_before_anything_runs(tmp_path, copied_workspace, body, head, message):
    _, model_dir, _, dev = copied_workspace  # the recipe's workspace, tmp_path / "ws", holds the adapters
    victim = tmp_path / "victim.json"
    victim.write_text("keep me")
    body = body.replace("DEV", str(dev))
    path = recipe_file(tmp_path, model_dir, body, head)
    if message is None:  # the recipe's own name becomes a folder
        path.write_text(path.read_text().replace('name = "r"', 'name = "../../victim"'))
        message = "recipe name '../../victim' must be text without '/'"
    before = snapshot(tmp_path)
    one_line_error(run_xling("run", str(path)), message)
    assert snapshot(tmp_path) == before


TAG = '[[step]]\ntitle = "TITLE"\nrun = "tag"\ninput = "DEV"\nlang = "en"\noutput = "OUTPUT"\n'


@pytest.mark.parametrize(
    "body, message",
    [
        (TAG.replace("OUTPUT", "steps.json"), "key 'output' 'steps.json' is the recipe's own result file"),
        (TAG.replace("OUTPUT", "./results.md"), "key 'output' 'results.md' is the recipe's own result file"),
        (TAG.replace("OUTPUT", "results.json"), "key 'output' 'results.json' is the recipe's own result file"),
        (
            EVALUATE.replace("TITLE", "e") + TAG.replace("OUTPUT", "e.json"),
            "key 'output' 'e.json' is the result of step 1",
        ),
        (TAG + TAG.replace("TITLE", "u"), "key 'output' 'OUTPUT' is the output of step 1"),
        (TAG.replace("TITLE", "t" * 300), "is 300 characters long; at most 100"),
        (TAG.replace("OUTPUT", "o" * 300 + ".jsonl"), "is too long: at most 1024 characters, 200 bytes a name"),
        (TAG.replace("OUTPUT", "a/" * 600 + "b.jsonl"), "is too long: at most 1024 characters"),
    ],
)
def test_an_output_the_recipe_writes_itself_or_too_long_is_refused_by_a_dry_run_too(
    tmp_path, copied_workspace, body, message
):
    _, model_dir, _, dev = copied_workspace
    path = recipe_file(tmp_path, model_dir, body.replace("DEV", str(dev)))
    before = snapshot(tmp_path)
    one_line_error(run_xling("run", str(path), "--dry-run"), message)
    if body.startswith(TAG.replace("OUTPUT", "steps.json")):  # and a run, which validates as the dry run does
        one_line_error(run_xling("run", str(path)), message)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("damage", ["[1, 2]", "{]", '{"t": 5}'])
def test_a_damaged_record_of_the_steps_run_is_named(tmp_path, copied_workspace, damage):
    _, model_dir, _, dev = copied_workspace
    path = recipe_file(tmp_path, model_dir, EVALUATE.replace("TITLE", "t").replace("DEV", str(dev)))
    results = tmp_path / "ws" / model_dir.name / "results" / "r"
    results.mkdir(parents=True)
    (results / "steps.json").write_text(damage)
    one_line_error(run_xling("run", str(path), "--dry-run"), str(results / "steps.json"))


def test_a_recipe_that_is_not_a_table_is_named_so(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text('recipe = "x"\n')
    one_line_error(run_xling("run", str(path)), "`recipe` must be a table")


def test_tag_and_analyze_outputs_go_into_the_recipes_results(tmp_path, trained_workspace):
    from xling.recipes.planning import output_path
    from xling.recipes.reading import read_recipe
    from xling.workspace import Workspace

    _, model_dir, _, dev = trained_workspace
    body = (
        f'[[step]]\ntitle = "tag"\nrun = "tag"\ninput = "{dev}"\nlang = "en"\noutput = "tagged/dev.jsonl"\n'
        f'[[step]]\ntitle = "ablation"\nrun = "analyze"\nanalysis = "ablation"\ndata = "{dev}"\nlang = "en"\n'
    )
    recipe = read_recipe(recipe_file(tmp_path, model_dir, body))
    workspace = Workspace(recipe.workspace, recipe.model)
    results = workspace.model_dir / "results" / "r"
    assert [output_path(step, recipe, workspace) for step in recipe.steps] == [
        results / "tagged" / "dev.jsonl",
        results / "layer-ablation.png",  # no longer the current folder
    ]


# ---- HTML and terminal output -----------------------------------------------------------------------


HOSTILE = 'X"><img src=x onerror=alert(2)>'


def test_html_output_escapes_every_string_that_reaches_it():
    from xling.tagging.base import Span, TaggedText
    from xling.tagging.output import to_html
    from xling.tagging.words import tokenize

    text = "<script>alert(1)</script> Qusqu"
    tokens = tokenize(text)
    span = Span(text="Qusqu", label=HOSTILE, start=text.index("Qusqu"), end=len(text), score=0.5)
    page = to_html([TaggedText(text, tokens, ["O"] * len(tokens), [1.0] * len(tokens), [span])], title=HOSTILE)
    assert "<img" not in page and "<script>" not in page and "onerror=alert(2)&gt;" in page
    assert 'title="X&quot;&gt;&lt;img src=x onerror=alert(2)&gt; · 0.50"' in page


def test_an_adapter_with_hostile_labels_is_refused_in_one_line(copied_workspace, tmp_path):
    workspace, model_dir, model_root, _ = copied_workspace
    head = model_root / "task" / "ner-en" / "head_config.json"
    config = json.loads(head.read_text())
    config["labels"][1] = "B-" + HOSTILE
    head.write_text(json.dumps(config))
    (tmp_path / "in.txt").write_text("Qusqu llaqta\n")
    run = run_xling(
        "tag", tmp_path / "in.txt", "--lang", "qu", "-t", "ner-en", "-f", "html", "-m", model_dir, "-w", workspace
    )
    one_line_error(run, "head_config.json", "labels must be O, B-TYPE or I-TYPE")


def test_control_characters_in_the_text_are_shown_escaped_on_the_terminal():
    from rich.console import Console

    from xling.tagging.base import TaggedText
    from xling.tagging.output import to_pretty

    console = Console(record=True, width=200, force_terminal=True)
    to_pretty([TaggedText("Qusqu\x1b[2J\x1b[1;1Hllaqta\x07", [], [], [], [])], console)
    shown = console.export_text(styles=False)
    assert "\x1b" not in shown and "\x07" not in shown and "\\x1b[2J\\x1b[1;1Hllaqta\\x07" in shown
    console = Console(record=True, width=200, force_terminal=True)
    to_pretty([TaggedText("Qusqu \u202egpj.exe\u2066 llaqta", [], [], [], [])], console)  # right-to-left override
    shown = console.export_text(styles=False)
    assert "\u202e" not in shown and "\u2066" not in shown and "Qusqu \\u202egpj.exe\\u2066 llaqta" in shown


# ---- options: ranges and types where they are declared -----------------------------------------------


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--epochs", "0"], "epochs must be a finite number above 0, not 0.0"),
        (["--epochs", "-1"], "epochs must be a finite number above 0"),
        (["--lr", "nan"], "lr must be a finite number above 0, not nan"),
        (["--lr", "inf"], "lr must be a finite number above 0"),
        (["--max-len", "0"], "max-len must be at least 8, not 0"),
        (["--warmup", "-1"], "warmup must be at least 0, not -1.0"),
        (["--train-limit", "0"], "train-limit must be at least 1"),
        (["--leave-out", "abc"], "expected comma-separated whole numbers, not 'abc'"),
        (["--reduction-factor", "0"], "reduction-factor must be at least 1"),
        (["--reduction-factor", "0.5"], "reduction-factor must be at least 1"),  # wider than the hidden size
        (["--leave-out", "5000"], "leave-out takes layer indices from 0 to 999, not 5000"),
    ],
)
def test_bad_training_numbers_are_refused_before_anything_is_written(tmp_path, trained_workspace, extra, message):
    _, model_dir, train, dev = trained_workspace
    command = ["train-task", "ner", "--lang", "en", "--train", train, "--dev", dev, "-m", model_dir]
    one_line_error(run_xling(*command, "-w", tmp_path / "ws", *extra), message)
    assert not (tmp_path / "ws").exists()


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"reduction_factor": 1e30}, "reduction_factor 1e+30 leaves no bottleneck of the hidden size 32"),
        ({"adapter_kind": "lora", "lora_rank": 10_000_000}, "lora-rank 10000000 is above the model's hidden size"),
        ({"leave_out": "0,1,99"}, "leave-out names layers [99], but the model has layers 0-"),
        ({"share_every": 7}, "share-every 7 is more than the model's 3 layers"),
    ],
)
def test_sizes_beyond_the_model_are_refused_before_anything_is_allocated(copied_workspace, extra, message):
    from xling.errors import XlingError
    from xling.options import build
    from xling.train.config import TaskAdapterOptions
    from xling.train.task import train_task_adapter

    workspace, model_dir, _, dev = copied_workspace
    values = {"task": "ner", "lang": "en", "train": str(dev), "dev": str(dev), "name": "big", **extra}
    options = build(TaskAdapterOptions, values | {"model": str(model_dir), "workspace": str(workspace)})
    before = snapshot(workspace)
    with pytest.raises(XlingError, match=re.escape(message)):
        train_task_adapter(options)
    assert snapshot(workspace) == before


@pytest.mark.parametrize("limit", ["-3", "0"])
def test_evaluate_refuses_a_limit_below_one(trained_workspace, limit):
    root, model_dir, _, dev = trained_workspace
    run = run_xling("evaluate", "ner", dev, "--lang", "en", "--limit", limit, "-m", model_dir, "-w", root / "ws")
    one_line_error(run, f"limit must be at least 1, not {limit}")


def test_empty_labelled_data_is_named(tmp_path, trained_workspace):
    root, model_dir, _, _ = trained_workspace
    empty = tmp_path / "empty.conll"
    empty.write_text("")
    run = run_xling("evaluate", "ner", empty, "--lang", "en", "-m", model_dir, "-w", root / "ws")
    one_line_error(run, "empty.conll holds no labelled sentences")


def test_a_workspace_that_is_a_file_is_named(tmp_path, trained_workspace):
    _, model_dir, _, dev = trained_workspace
    (tmp_path / "ws").write_text("a file")
    run = run_xling("evaluate", "ner", dev, "--lang", "en", "-m", model_dir, "-w", tmp_path / "ws" / "x")
    one_line_error(run, "is a file, not a folder")


# ---- damaged adapter configs ---------------------------------------------------------------------------


def _edit_config(path, change) -> None:
    config = json.loads(path.read_text())
    path.write_text(json.dumps(change(config)))


DAMAGES = {
    "no config": (lambda c: {k: v for k, v in c.items() if k != "config"}, "'config' is missing"),
    "reduction factor as text": (
        lambda c: {**c, "config": {**c["config"], "reduction_factor": "eight"}},
        "option 'reduction_factor' takes a number, not 'eight'",
    ),
    "base model as text": (lambda c: {**c, "base_model": "e5"}, "has no base-model fingerprint"),
    "base model as a list": (lambda c: {**c, "base_model": ["e5"]}, "has no base-model fingerprint"),
    "config as a list": (lambda c: {**c, "config": []}, "'config' is missing or not a dict"),
    "leave_out as text": (lambda c: {**c, "config": {**c["config"], "leave_out": "abc"}}, "'leave_out' takes a list"),
    "a JSON array": (lambda c: [c], "is not an adapter config"),
    "cut fingerprint": (
        lambda c: {**c, "base_model": {**c["base_model"], "fingerprint": {"architecture": "bert"}}},
        "the base-model fingerprint lacks embedding_sha256, hidden_size",
    ),
    "leave_out outside the layers": (
        lambda c: {**c, "config": {**c["config"], "leave_out": [99, 1]}},
        "leave-out names layers [99], but the model has layers 0-2",
    ),
    "negative leave_out": (
        lambda c: {**c, "config": {**c["config"], "leave_out": [-1]}},
        "leave-out takes layer indices from 0 to 999, not -1",
    ),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_adapter_config_is_refused_naming_the_file(copied_workspace, damage):
    from xling import Tagger
    from xling.errors import XlingError

    workspace, model_dir, model_root, dev = copied_workspace
    change, message = DAMAGES[damage]
    config = model_root / "lang" / "qu" / "xling_adapter.json"
    _edit_config(config, change)
    with pytest.raises(XlingError) as refused:
        Tagger.load(lang="qu", task_adapter="ner-en", model=str(model_dir), workspace=str(workspace))
    assert message in str(refused.value) and str(config) in str(refused.value)
    if damage == "no config":  # the command line says the same in one line
        run = run_xling("evaluate", "ner", dev, "--lang", "qu", "-t", "ner-en", "-m", model_dir, "-w", workspace)
        one_line_error(run, message, str(config))


def test_init_from_a_damaged_task_adapter_is_one_line(copied_workspace):
    workspace, model_dir, model_root, dev = copied_workspace
    _edit_config(model_root / "task" / "ner-en" / "xling_adapter.json", DAMAGES["reduction factor as text"][0])
    command = ["train-task", "ner", "--lang", "en", "--train", dev, "--dev", dev, "--name", "again"]
    run = run_xling(*command, "--init-from", "ner-en", "-m", model_dir, "-w", workspace)
    one_line_error(run, "ner-en/xling_adapter.json", "'reduction_factor' takes a number")


# ---- damaged or shared runs -----------------------------------------------------------------------------


def interrupted_run(workspace, model_dir, train, dev):
    """A task-adapter run (`again`) stopped by Ctrl-C at step 3, its checkpoint left in `again.partial`."""
    from xling.options import build
    from xling.train.config import TaskAdapterOptions
    from xling.train.progress import TextProgress
    from xling.train.task import train_task_adapter

    class Interrupt(TextProgress):
        def advance(self, done: int, info: str) -> None:
            if done == 3:
                raise KeyboardInterrupt

    values = {
        "lang": "en",
        "train": [str(train)],
        "dev": str(dev),
        "model": str(model_dir),
        "workspace": str(workspace),
    }
    options = build(TaskAdapterOptions, {**values, **RUN_OPTIONS})  # as the command line builds them
    with pytest.raises(KeyboardInterrupt):
        train_task_adapter(options, progress=Interrupt())
    return ["train-task", "ner", "--lang", "en", "--train", train, "--dev", dev]


RUN_OPTIONS = {"name": "again", "steps": 6, "batch_size": 8, "checkpoint_every": 2, "eval_every": 3, "lr": 1e-3}
RUN_ARGS = [part for key, value in RUN_OPTIONS.items() for part in ("--" + key.replace("_", "-"), str(value))]


@pytest.mark.slow
@pytest.mark.parametrize(
    "file_name, damage, message",
    [
        ("run.json", lambda text: text[: len(text) // 2], "run.json is not valid JSON"),
        ("checkpoint/state.json", lambda text: "{]", "checkpoint state.json unreadable"),
        ("checkpoint/state.json", lambda text: "{}", "lacks the weights, optimiser, scheduler or step"),
        ("checkpoint/tensors.safetensors", None, "checkpoint tensors unreadable"),
        ("log.jsonl", lambda text: text + 'not json\n{"step": 2}\n', "is not valid JSON"),
    ],
)
def test_a_damaged_interrupted_run_says_restart_in_one_line(tmp_path, copied_workspace, file_name, damage, message):
    _, model_dir, _, dev = copied_workspace
    command = interrupted_run(tmp_path / "ws", model_dir, dev, dev)
    run_dir = tmp_path / "ws" / model_dir.name / "task" / "again.partial"
    file = run_dir / file_name
    if damage is None:
        file.write_bytes(file.read_bytes()[:50])
    else:
        file.write_text(damage(file.read_text()))
    run = run_xling(*command, *RUN_ARGS, "-m", model_dir, "-w", tmp_path / "ws")
    one_line_error(run, f"the interrupted run in {run_dir} is damaged", message, "add --restart to start over")
    if file_name == "run.json":  # what --restart does is the same whatever was damaged
        restarted = run_xling(*command, *RUN_ARGS, "--restart", "-m", model_dir, "-w", tmp_path / "ws")
        assert restarted.returncode == 0, restarted.stderr
        assert not run_dir.exists() and (run_dir.parent / "again" / "task.json").is_file()


def test_a_log_line_cut_short_by_a_kill_is_dropped_and_the_run_resumes(tmp_path, copied_workspace):
    _, model_dir, _, dev = copied_workspace
    command = interrupted_run(tmp_path / "ws", model_dir, dev, dev)
    log = tmp_path / "ws" / model_dir.name / "task" / "again.partial" / "log.jsonl"
    log.write_text(log.read_text() + '{"step": 4, "f1"')
    run = run_xling(*command, *RUN_ARGS, "-m", model_dir, "-w", tmp_path / "ws")
    assert run.returncode == 0 and "resuming" in run.stderr, run.stderr


def test_a_log_line_of_no_evaluation_is_refused_as_damage_naming_its_line(tmp_path, copied_workspace):
    _, model_dir, _, dev = copied_workspace
    command = interrupted_run(tmp_path / "ws", model_dir, dev, dev)
    log = tmp_path / "ws" / model_dir.name / "task" / "again.partial" / "log.jsonl"
    log.write_text('{"step": 1, "f1": "high"}\n' + log.read_text())
    run = run_xling(*command, *RUN_ARGS, "-m", model_dir, "-w", tmp_path / "ws")
    one_line_error(run, "is damaged (log.jsonl line 1")


@pytest.mark.slow
def test_a_run_directory_that_is_a_link_is_never_followed(tmp_path, copied_workspace):
    _, model_dir, _, dev = copied_workspace
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    run_dir = tmp_path / "ws" / model_dir.name / "task" / "link.partial"
    run_dir.symlink_to(outside)
    command = ["train-task", "ner", "--lang", "en", "--train", dev, "--dev", dev, "--steps", "2", "--name", "link"]
    command += ["-m", model_dir]
    one_line_error(run_xling(*command, "-w", tmp_path / "ws"), "is a symbolic link, which xling does not follow")
    restarted = run_xling(*command, "--restart", "-w", tmp_path / "ws")
    assert restarted.returncode == 0, restarted.stderr
    assert snapshot(outside) == {"precious.txt": b"keep me"} and not run_dir.is_symlink()


@pytest.mark.slow
def test_a_second_run_of_the_same_name_is_refused_naming_the_first(tmp_path, copied_workspace):
    from xling.fileio import EntryLock

    _, model_dir, _, dev = copied_workspace
    train = dev
    target = tmp_path / "ws" / model_dir.name / "task" / "conc2"
    lock = EntryLock(target, "task adapter")  # what the first run holds while it trains and saves
    command = ["train-task", "ner", "--lang", "en", "--train", train, "--dev", dev, "--steps", "2", "--name", "conc2"]
    run = run_xling(*command, "-m", model_dir, "-w", tmp_path / "ws")
    one_line_error(run, f"another xling run (pid {os.getpid()}) is training or saving the task adapter 'conc2'")
    assert not (target.parent / "conc2.partial").exists()
    lock.release()
    assert run_xling(*command, "-m", model_dir, "-w", tmp_path / "ws").returncode == 0
    assert sorted(p.name for p in target.parent.glob("conc2*")) == ["conc2"]  # the lock file went with the run


# ---- models, the network, the machine ------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda c: {**c, "auto_map": {"AutoModel": "modeling_x.XModel"}}, "asks to run code shipped with the model"),
        (lambda c: {k: v for k, v in c.items() if k != "model_type"}, "config.json has no model_type"),
    ],
)
def test_a_model_folder_that_would_run_its_own_code_or_names_no_type_is_refused(tmp_path, change, message):
    from tests.tiny import save_tiny_model

    model_dir = save_tiny_model("bert", tmp_path / "model")
    _edit_config(model_dir / "config.json", change)
    (tmp_path / "t.txt").write_text("Qusqu llaqta\nLima Peru\n")
    one_line_error(run_xling("train-lang", "qu", tmp_path / "t.txt", "-m", model_dir, "-w", tmp_path / "ws"), message)


def test_push_to_an_unreachable_hub_is_one_line(trained_workspace):
    root, model_dir, _, _ = trained_workspace
    adapter = root / "ws" / model_dir.name / "task" / "ner-en"
    env = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_TOKEN": "hf_xling_test", "HF_HUB_OFFLINE": "0"}
    run = run_xling("push", adapter, "someone/ner-en", env=env, timeout=120)
    one_line_error(run, "cannot push to someone/ner-en")


@pytest.mark.parametrize(
    "error, message",
    [
        (OSError(errno.ENOSPC, "No space left on device", "/ws/x"), "the disk is full (writing /ws/x)"),
        (RuntimeError("SafetensorError: No space left on device (os error 28)"), "the disk is full"),
        (OSError(errno.EROFS, "Read-only file system", "/ws"), "the file system is read-only"),
        (OSError(errno.ENOTDIR, "Not a directory", "/ws/f/x"), "/ws/f/x: not a directory"),
        (RuntimeError("Error while deserializing header: Cannot allocate memory (os error 12)"), "out of memory"),
    ],
)
def test_the_machines_failures_are_one_line_saying_what_to_do(monkeypatch, capsys, error, message):
    app = importlib.import_module("xling.cli.app")  # the package's attribute `app` is the Typer app

    def fail():
        raise error

    monkeypatch.setattr(app, "check_launcher", fail)
    monkeypatch.setattr(sys, "argv", ["xling", "--version"])
    with pytest.raises(SystemExit) as exit_code:
        app.main()
    assert exit_code.value.code == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_an_unexpected_error_is_one_line_with_its_traceback_kept(monkeypatch, capsys, tmp_path):
    app = importlib.import_module("xling.cli.app")

    def fail():
        raise KeyError("boom")

    monkeypatch.setenv("XLING_HOME", str(tmp_path))
    monkeypatch.delenv("XLING_DEBUG", raising=False)
    monkeypatch.setattr(app, "check_launcher", fail)
    monkeypatch.setattr(sys, "argv", ["xling", "--version"])
    with pytest.raises(SystemExit):
        app.main()
    line = capsys.readouterr().err.strip()
    assert line.startswith("error: unexpected KeyError: 'boom' (traceback in ") and "\n" not in line
    (log,) = (tmp_path / "errors").iterdir()
    assert "Traceback" in log.read_text() and "KeyError: 'boom'" in log.read_text()
    monkeypatch.setenv("XLING_DEBUG", "1")  # what --debug sets
    with pytest.raises(KeyError, match="boom"):
        app.main()


@pytest.mark.parametrize(
    "said, line",
    [
        ("memory allocation of 492830720 bytes failed", "out of memory"),
        ("called `Result::unwrap()` on an `Err` value", "error: unexpected PanicException: called `Result::unwrap()`"),
    ],
)
def test_a_panic_in_a_rust_library_is_one_line_too(monkeypatch, capsys, tmp_path, said, line):
    app = importlib.import_module("xling.cli.app")

    class PanicException(BaseException):  # pyo3's, as safetensors and tokenizers raise it: no Exception
        pass

    def fail():
        raise PanicException(said)

    monkeypatch.setenv("XLING_HOME", str(tmp_path))
    monkeypatch.delenv("XLING_DEBUG", raising=False)
    monkeypatch.setattr(app, "check_launcher", fail)
    monkeypatch.setattr(sys, "argv", ["xling", "--version"])
    with pytest.raises(SystemExit) as exit_code:
        app.main()
    error = capsys.readouterr().err.strip()
    assert exit_code.value.code == 1 and "\n" not in error and line in error, error


def test_an_encoder_folder_is_saved_from_the_tensors_memory_without_a_second_copy(tmp_path):
    import tracemalloc

    import safetensors.torch
    from transformers import AutoModel

    from tests.tiny import tiny_config, tiny_tokenizer
    from xling.models.folders import write_model_folder

    encoder = AutoModel.from_config(tiny_config("bert", 40_000))  # a 5 MB embedding matrix
    tracemalloc.start()
    try:
        folder = write_model_folder(encoder, tiny_tokenizer(), {}, tmp_path / "adapted", False, {})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    size = (folder / "model.safetensors").stat().st_size
    assert size > 5_000_000 and peak < size / 2  # the file was never built whole as a Python bytes object
    saved = safetensors.torch.load_file(folder / "model.safetensors")
    assert torch.equal(saved["bert.embeddings.word_embeddings.weight"], encoder.embeddings.word_embeddings.weight)


# ---- one very long line -----------------------------------------------------------------------------------


def test_a_very_long_line_is_cut_at_spaces_into_bounded_pieces_that_join_back():
    from xling.data.text import MAX_LINE_CHARS, line_pieces

    line = " ".join(f"word{i}" for i in range(300_000))  # about 2.3 million characters, no line break
    pieces = list(line_pieces(line))
    assert "".join(pieces) == line
    assert all(len(piece) <= MAX_LINE_CHARS for piece in pieces) and len(pieces) > len(line) // MAX_LINE_CHARS
    assert all(piece.endswith(" ") for piece in pieces[:-1])  # never inside a word
    assert list(line_pieces("x" * (MAX_LINE_CHARS + 5))) == ["x" * MAX_LINE_CHARS, "xxxxx"]  # no space at all


def test_tag_tags_a_long_line_in_pieces_and_gives_it_back_as_one_record(tmp_path, trained_workspace):
    from xling.data.text import MAX_LINE_CHARS

    root, model_dir, _, _ = trained_workspace
    line = " ".join(["juan lima qusqu runa"] * (3 * MAX_LINE_CHARS // 20))  # three pieces' worth
    (tmp_path / "long.txt").write_text(line + "\nQusqu llaqta\n")
    run = run_xling(
        "tag",
        tmp_path / "long.txt",
        "--lang",
        "en",
        "-f",
        "jsonl",
        "-m",
        model_dir,
        "-w",
        root / "ws",
        "-o",
        tmp_path / "out",
    )
    assert run.returncode == 0, run.stderr
    records = [json.loads(row) for row in (tmp_path / "out").read_text().splitlines()]
    assert [r["text"] for r in records] == [line, "Qusqu llaqta"] and [r["line"] for r in records] == [1, 2]
    assert len(line) > 2 * MAX_LINE_CHARS and all(
        line[e["start"] : e["end"]] == e["word"] for e in records[0]["entities"]
    )


def test_ctrl_c_says_how_to_resume_and_exits_130(trained_workspace):
    import signal
    import subprocess

    root, model_dir, _, _ = trained_workspace
    command = [sys.executable, "-m", "xling", "tag", "-", "--lang", "en", "--model", str(model_dir), "-w", root / "ws"]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}

    def default_sigint():  # a background job starts with SIGINT ignored, and so would the command
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    tagging = subprocess.Popen(command, **pipes, text=True, preexec_fn=default_sigint)
    tagging.stdin.write("juan lima\n")  # then the input stays open: the command waits for more
    tagging.stdin.flush()
    # Its result proves the command is past start-up and waiting on the input: a signal sent sooner may
    # land before Python has installed its handler, or inside a library's import.
    first = tagging.stdout.readline()
    assert "juan" in first, first
    tagging.send_signal(signal.SIGINT)
    _, stderr = tagging.communicate(timeout=60)
    assert tagging.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "error: interrupted; rerun the same command to resume", stderr
