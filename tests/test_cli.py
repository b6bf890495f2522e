"""The command line as a user runs it: real processes, exit codes, output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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
    from xling.train.config import TaskAdapterOptions, TrainConfig
    from xling.train.text_config import LanguageAdapterOptions

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


def _app_commands() -> dict:
    """Every command of the app by its full name (`analyze fusion`), as the command line builds it."""
    import typer

    from xling.cli.app import app

    root, found = typer.main.get_command(app), {}
    for name in root.list_commands(None):  # the lazy group reads no context
        command = root.get_command(None, name)
        subcommands = command.commands.items() if hasattr(command, "commands") else [(None, command)]
        found.update({" ".join(filter(None, (name, sub))): each for sub, each in subcommands})
    return found


# Commands with no options but how they print (`--json`).
WITHOUT_OPTIONS = {"models list", "corpora list"}  # nothing to choose: they show what there is


def test_every_command_takes_the_options_of_its_dataclass_and_runs_them_as_a_recipe_step_would():
    """One table: each command's options are its dataclass's (those a recipe step's keys are), no more, no less."""
    from xling.analysis.options import ANALYSES
    from xling.options import defaults, options_of
    from xling.recipes.kinds import RUNS

    commands = _app_commands()
    assert len(commands) >= 20 and set(COMMANDS) <= {name.split()[0] for name in commands}
    command_only = {"as_json"}  # --json: how a result is printed
    made = {name: getattr(command.callback, "options_class", None) for name, command in commands.items()}
    assert {name for name, cls in made.items() if cls is None} == WITHOUT_OPTIONS
    analyses = set()
    for name, cls in made.items():
        if cls is None:
            continue
        shown = set(commands[name].callback.options_shown)
        assert {param.name.rstrip("_") for param in commands[name].params} - command_only == shown, name
        if name.startswith("analyze "):  # each analysis takes the options it uses; its name is the subcommand
            analyses |= shown
            continue
        assert shown == set(options_of(defaults(cls))), (name, shown ^ set(options_of(defaults(cls))))
        assert name not in RUNS or RUNS[name].options is cls, name  # a recipe step of this kind: the same options
    assert analyses | {"analysis"} == set(options_of(defaults(RUNS["analyze"].options)))
    # one subcommand per registered analysis, showing the options its record names
    assert {name.removeprefix("analyze ") for name in made if name.startswith("analyze ")} == set(ANALYSES)
    for analysis in ANALYSES.values():
        assert set(commands[f"analyze {analysis.name}"].callback.options_shown) == set(analysis.shown)


def recording_app(cls):
    """A typer app of one command made from `cls` by `command`, and the list the options it builds go to."""
    import typer

    from xling.cli.options import command

    seen = []

    @command(cls)
    def run(options):
        """Run."""
        seen.append(options)

    app = typer.Typer()
    app.command()(run)
    return app, seen


def test_a_new_field_is_an_option_of_the_command_with_no_other_edit():
    from dataclasses import make_dataclass

    from typer.testing import CliRunner

    from xling.options import opt
    from xling.tagging.options import TagOptions

    extended = make_dataclass(
        "Extended", [("beam_width", int, opt(4, "Beams kept while decoding."))], bases=(TagOptions,)
    )
    app, seen = recording_app(extended)
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert "--beam-width" in shown and "Beams kept while decoding." in shown and "[default: 4]" in shown
    ran = CliRunner().invoke(app, ["text.txt", "--lang", "qu", "--beam-width", "7", "-f", "conll"])
    assert ran.exit_code == 0, ran.output
    assert (seen[0].beam_width, seen[0].input, seen[0].tagger.lang, seen[0].format) == (7, "text.txt", "qu", "conll")
    assert isinstance(seen[0], TagOptions)  # the command built the dataclass, as a recipe step does


@pytest.mark.parametrize(
    ("options", "arguments", "expected"),
    [
        ("EvaluationOptions", ["corpus:wikiann-qu/dev"], ("ner", "corpus:wikiann-qu/dev")),
        ("EvaluationOptions", ["ner", "dev.conll"], ("ner", "dev.conll")),
        ("SelfTrainingOptions", ["a.txt", "b.txt", "--dev", "d.conll"], ("ner", ["a.txt", "b.txt"])),
        ("SelfTrainingOptions", ["ner", "a.txt", "--dev", "d.conll"], ("ner", ["a.txt"])),
        ("SelfTrainingOptions", ["a.txt", "--dev", "d.conll"], ("ner", ["a.txt"])),
    ],
)
def test_the_task_name_before_the_data_may_be_left_out(options, arguments, expected):
    from typer.testing import CliRunner

    from xling.tagging import options as tagging
    from xling.train import config

    cls = getattr(tagging, options, None) or getattr(config, options)
    app, seen = recording_app(cls)
    ran = CliRunner().invoke(app, [*arguments, "--lang", "qu"])
    assert ran.exit_code == 0, ran.output
    task = seen[0].tagger.task if options == "EvaluationOptions" else seen[0].task
    data = seen[0].data if options == "EvaluationOptions" else seen[0].corpus
    assert (task, data) == expected
    missing = CliRunner().invoke(app, ["--lang", "qu", *arguments[-2:]] if "--dev" in arguments else ["--lang", "qu"])
    assert missing.exit_code == 2 and "missing" in missing.output.lower()


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


def test_a_command_whose_extra_is_not_installed_names_the_extra_in_one_line(tmp_path):
    missing = tmp_path / "missing"
    missing.mkdir()
    for module in ("flask", "matplotlib"):  # shadows the installed package, as if it were not there
        (missing / f"{module}.py").write_text("raise ImportError('not installed')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(missing), str(Path(__file__).parent.parent)])}
    annotate = run_xling("annotate", "qu", "-w", tmp_path / "ws", env=env)
    assert annotate.returncode == 1 and annotate.stderr.strip() == (
        'error: xling annotate needs the annotate extra: pip install -e ".[annotate]" from a clone of xling '
        "(flask is not installed)"
    )
    analyze = run_xling("analyze", "params", "-w", tmp_path / "ws", env=env)
    assert analyze.returncode == 1 and 'needs the plots extra: pip install -e ".[plots]"' in analyze.stderr
    assert len(analyze.stderr.strip().splitlines()) == 1


def test_an_error_line_is_one_printable_line_of_bounded_length():
    from xling.cli.app import MAX_ERROR, one_line

    assert one_line("no adapter 'ner-qu'") == "no adapter 'ner-qu'"
    damaged = one_line("bad line: " + "\x00" * 20_000)
    assert len(damaged) == MAX_ERROR and damaged.endswith(" ...") and damaged.isprintable() and "\\x00" in damaged
    worded = one_line("one problem after another; " * 100)
    assert len(worded) <= MAX_ERROR and worded.endswith(" ...")
    assert worded[:-4].split(" ")[-1] in ("one", "problem", "after", "another;")  # no word cut in two
    turned = one_line("file \u202egpj.exe: not loaded\nsecond line")
    assert turned == "file \\u202egpj.exe: not loaded\\nsecond line" and turned.isprintable()


def test_drawing_a_plot_writes_matplotlib_s_cache_into_xling_s_not_home(tmp_path):
    import os
    import subprocess
    import sys

    home, xling_home = tmp_path / "home", tmp_path / "xling-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "MPLCONFIGDIR"} | {
        "HOME": str(home),
        "XLING_HOME": str(xling_home),
    }
    code = "import xling.analysis.plots as plots, matplotlib.pyplot as plt; plt.figure(); plt.text(0, 0, 'qu')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert not list(home.iterdir()) and (xling_home / "matplotlib").is_dir()
