"""Where xling keeps things: the model cache and the workspace of trained adapters.

`XLING_HOME` moves both: models to `$XLING_HOME/models`, and the default workspace to
`$XLING_HOME/workspace`. Without it, models live in `~/.cache/xling/models` and the
workspace is `./xling-workspace`.
"""

from __future__ import annotations

import os
from pathlib import Path


def xling_home() -> Path | None:
    home = os.environ.get("XLING_HOME")
    return Path(home).expanduser() if home else None


def model_cache_dir() -> Path:
    home = xling_home()
    return home / "models" if home else Path.home() / ".cache" / "xling" / "models"


def default_workspace() -> Path:
    home = xling_home()
    return home / "workspace" if home else Path("xling-workspace")
