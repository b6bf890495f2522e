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
