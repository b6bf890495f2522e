"""Package exports loaded on first use: `from xling.adapters import BottleneckConfig` then imports no torch,
so the command line can read every option and its help without loading a model library."""

from __future__ import annotations

import importlib


def lazy_exports(table: dict[str, str]):
    """A module `__getattr__` that imports each exported name from its module (`table`) when first asked for."""

    def __getattr__(name: str):
        if name not in table:
            raise AttributeError(name)
        return getattr(importlib.import_module(table[name]), name)

    return __getattr__
