"""Package exports loaded on first use: `from xling.adapters import BottleneckConfig` then imports no torch,
so the command line can read every option and its help without loading a model library; and the modules of an
optional extra, each asked for where it is needed."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xling.errors import XlingError


def lazy_exports(table: dict[str, str]):
    """A module `__getattr__` that imports each exported name from its module (`table`) when first asked for."""

    def __getattr__(name: str):
        if name not in table:
            raise AttributeError(name)
        return getattr(importlib.import_module(table[name]), name)

    return __getattr__


def later(path: str) -> Callable:
    """The function `module:name`, imported at its first call: validating a recipe (`--dry-run`) or reading a
    command's options needs none of what training, tagging and scoring import (torch, seqeval)."""

    def call(*args, **kwargs):
        module, name = path.split(":")
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call


def require(module: str, extra: str, what: str):
    """`module`, imported; where it is not installed, one line naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise XlingError(
            f'{what} needs the {extra} extra: pip install -e ".[{extra}]" from a clone of xling '
            f"({module} is not installed)"
        ) from None
