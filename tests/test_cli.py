"""The command line as a user runs it: real processes, exit codes, output."""

from __future__ import annotations

from tests.tiny import run_xling


def test_version_and_help():
    from xling import __version__

    result = run_xling("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"xling {__version__}"
    result = run_xling("--help")
    assert result.returncode == 0 and "models" in result.stdout


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


def test_command_line_and_recipe_options_override_the_config_defaults_by_one_rule():
    from xling.train.loop import TrainConfig

    lang_defaults = TrainConfig(max_steps=1000, learning_rate=1e-4)
    assert lang_defaults.with_options({"epochs": 2, "lr": 3e-4, "lang": "qu"}) == TrainConfig(
        max_steps=None, epochs=2, learning_rate=3e-4
    )
    both = lang_defaults.with_options({"steps": 50, "epochs": 2, "batch_size": None})
    assert (both.max_steps, both.epochs, both.batch_size) == (50, 2, lang_defaults.batch_size)
    assert TrainConfig(checkpoint_every=100).with_options({}) == TrainConfig(checkpoint_every=100)


def test_command_defaults_are_the_config_defaults():
    from xling.train.task import TaskAdapterOptions

    defaults = TaskAdapterOptions(lang="en", train="", dev="").training
    shown = run_xling("train-task", "--help", env={"COLUMNS": "200"}).stdout
    for option, value in [("--checkpoint-every", defaults.checkpoint_every), ("--batch-size", defaults.batch_size)]:
        line = next(line for line in shown.splitlines() if option in line)
        assert f"[default: {value}]" in line
