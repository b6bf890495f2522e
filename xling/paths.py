"""Where xling keeps things: the model cache and the workspace of trained adapters.

`XLING_HOME` moves them: models to `$XLING_HOME/models`, tracebacks of unexpected errors to
`$XLING_HOME/errors`, and the default workspace to `$XLING_HOME/workspace`. Without it, models
and tracebacks live in `~/.cache/xling` and the workspace is `./xling-workspace`.
"""

from __future__ import annotations

import os
from pathlib import Path


def xling_home() -> Path | None:
    home = os.environ.get("XLING_HOME")
    return Path(home).expanduser() if home else None


def cache_dir() -> Path:
    home = xling_home()
    return home if home else Path.home() / ".cache" / "xling"


def model_cache_dir() -> Path:
    return cache_dir() / "models"


def error_log_dir() -> Path:
    """Where the traceback of an unexpected error is kept for a report."""
    return cache_dir() / "errors"


WORKSPACE_HELP = "Workspace root (default: $XLING_HOME/workspace, else ./xling-workspace)."


def default_workspace() -> Path:
    home = xling_home()
    return home / "workspace" if home else Path("xling-workspace")
