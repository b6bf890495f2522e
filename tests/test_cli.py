"""The command line as a user runs it: real processes, exit codes, output."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.tiny import run_xling
from xling.cli.app import COMMANDS


def test_version_and_help():
    from xling import __version__

    result = run_xling("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"xling {__version__}"
    result = run_xling("--help", env={"COLUMNS": "200"})
    assert result.returncode == 0 and "models" in result.stdout
    assert "Tag entities in text: one sentence per line" in result.stdout  # summaries read from the source
    assert "--install-completion" in result.stdout


def test_version_help_and_command_completion_never_import_torch():
    commands = [["--version"], ["--help"]] + [[name, "--help"] for name in COMMANDS]
    probe = (
        "import sys; from xling.cli.app import app\n"
        f"for args in {commands!r}:\n"
        "    try: app(args)\n"
        "    except SystemExit: pass\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    as_script = "import sys; from xling.cli import main; sys.argv[0] = 'xling'; main()"  # the installed `xling`
    completing = {**os.environ, "_XLING_COMPLETE": "complete_bash", "COMP_WORDS": "xling tr", "COMP_CWORD": "1"}
    completion = subprocess.run([sys.executable, "-c", as_script], capture_output=True, text=True, env=completing)
    assert completion.returncode == 0 and "train-lang" in completion.stdout and "tag" not in completion.stdout.split()


def test_models_pull_then_list(embedded, xling_home):
    result = run_xling("models", "pull", "e5-small", env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert str(xling_home / "models" / "multilingual-e5-small-") in result.stdout.replace("\n", "")
    listing = run_xling("models", "list", env={"COLUMNS": "200"})
    assert listing.returncode == 0
    assert "e5-small, multilingual-e5-small" in listing.stdout and "converted, cached" in listing.stdout


def test_pull_missing_directory_is_one_line_error(tmp_path):
    result = run_xling("models", "pull", str(tmp_path / "missing"))
    assert result.returncode == 1
    assert result.stderr.strip().startswith("error:") and len(result.stderr.strip().splitlines()) == 1


def test_unknown_command_is_usage_error():
    result = run_xling("no-such-command")
    assert result.returncode == 2


def test_options_are_built_from_command_line_or_recipe_values_by_one_rule():
    from xling.adapters import BottleneckConfig
    from xling.errors import XlingError
    from xling.options import build
    from xling.train.config import LanguageAdapterOptions, TaskAdapterOptions, TrainConfig

    lang = build(LanguageAdapterOptions, {"lang": "qu", "corpus": ["a.txt"], "epochs": 2, "lr": 3e-4})
    assert lang.training == TrainConfig(max_steps=None, epochs=2, learning_rate=3e-4)  # --epochs replaces the steps
    both = build(LanguageAdapterOptions, {"lang": "qu", "corpus": [], "steps": 50, "epochs": 2, "batch_size": None})
    assert (both.training.max_steps, both.training.epochs, both.training.batch_size) == (50, 2, 8)
    assert build(LanguageAdapterOptions, {"lang": "qu", "corpus": []}) == LanguageAdapterOptions(lang="qu", corpus=[])

    task = build(
        TaskAdapterOptions,
        {
            "lang": "en",
            "train": ["t"],
            "dev": "d",
            "preset": "houlsby",
            "reduction_factor": 8,
            "leave_out": "10,11",  # command-line text and recipe lists alike
            "drop_labels": "MISC, DATE",
            "label_map": "PERSON=PER",
            "no_lang_adapter": True,
            "mask_prob": 0.5,  # another command's option: ignored
        },
    )
    assert task.adapter.config == BottleneckConfig.preset("houlsby", reduction_factor=8, leave_out=[10, 11])
    assert (task.drop_labels, task.label_map, task.use_lang_adapter) == (["MISC", "DATE"], {"PERSON": "PER"}, False)
    try:
        build(TaskAdapterOptions, {"lang": "en", "dev": "d"})
        raise AssertionError("a missing required option must be refused")
    except XlingError as err:
        assert str(err) == "missing option(s): --train"


def test_every_option_of_a_command_is_its_config_option_and_a_recipe_key():
    """One table: each command's options are its dataclass's options, and its recipe keys are the same names."""
    import inspect

    from xling.cli import evaluate, tag, train
    from xling.options import defaults, options_of
    from xling.recipes import KEYS, OPTIONS, RUN_LEVEL

    commands = {
        "train-lang": train.train_lang,
        "train-task": train.train_task,
        "train-fusion": train.train_fusion_command,
        "self-train": train.self_train_command,
        "evaluate": evaluate.evaluate_command,
        "tag": tag.tag,
    }
    command_only = {"task", "as_json"}  # the task argument (a config field too) and --json
    for run, command in commands.items():
        names = {"from" if p == "source" else p for p in inspect.signature(command).parameters} - command_only
        config_options = set(options_of(defaults(OPTIONS[run]))) - {"task"}
        assert names == config_options, (run, names ^ config_options)
        assert names - RUN_LEVEL <= KEYS[run], (run, names - RUN_LEVEL - KEYS[run])
    # analyze: its four subcommands together take the options of one dataclass, the subcommand its `analysis`
    from xling.cli import analyze, annotate

    subcommands = (analyze.fusion, analyze.ablation, analyze.confidence, analyze.params)
    names = set().union(*(inspect.signature(f).parameters for f in subcommands)) - command_only
    assert names | {"analysis"} == set(options_of(defaults(OPTIONS["analyze"])))
    assert names - RUN_LEVEL <= KEYS["analyze"]
    from xling.annotation.options import AnnotateOptions, SelectOptions
    from xling.cli import share
    from xling.exporting import ExportOptions

    for command, cls in (
        (annotate.select_command, SelectOptions),
        (annotate.annotate_command, AnnotateOptions),
        (share.export_command, ExportOptions),
    ):
        assert set(inspect.signature(command).parameters) == set(options_of(defaults(cls))), cls.__name__


def test_command_defaults_are_the_config_defaults():
    from xling.options import defaults
    from xling.train.config import TaskAdapterOptions

    training = defaults(TaskAdapterOptions).training
    shown = run_xling("train-task", "--help", env={"COLUMNS": "200"}).stdout
    for option, value in [("--checkpoint-every", training.checkpoint_every), ("--batch-size", training.batch_size)]:
        line = next(line for line in shown.splitlines() if option in line)
        assert f"[default: {value}]" in line


def test_an_analysis_without_what_it_needs_is_one_line():
    result = run_xling("analyze", "fusion", "data.conll", "--lang", "qu")
    assert result.returncode == 1 and result.stderr.strip() == "error: analyze fusion needs --fusion"
