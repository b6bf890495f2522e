"""Composition blocks: which adapters are active and how they combine.

A setup is a single adapter name, `Stack("qu", "ner")` (the language adapter under the
task adapter), `Fuse("ner-en", "ner-es")`, or `Stack("qu", Fuse("ner-en", "ner-es"))`.
"""

from __future__ import annotations

import re

from xling.errors import XlingError
from xling.options import shown

# A language adapter's name inside a model, apart from task adapters, which may be named anything; shown as its
# language, as users know it (`Stack(qu, ner-en)`).
LANG_PREFIX = "lang-"


def lang_adapter_name(lang: str) -> str:
    return f"{LANG_PREFIX}{lang}"


def setup_text(setup) -> str:
    """A setup as result files, notices and plots show it: `Stack(qu, ner-en)`, a language adapter by its language
    and names unquoted (`repr` keeps the Python spelling); a setup recorded in that spelling
    (`Stack('lang-qu', 'ner-en')`, older result files) is shown the same way."""
    if isinstance(setup, _Block):
        return f"{type(setup).__name__}({', '.join(map(setup_text, setup.children))})"
    unquoted = re.sub(r"'([^']*)'", lambda quoted: quoted.group(1).removeprefix(LANG_PREFIX), str(setup))
    return unquoted.removeprefix(LANG_PREFIX)


class _Block:
    children: tuple

    def __iter__(self):
        return iter(self.children)

    def __eq__(self, other):
        return type(other) is type(self) and other.children == self.children

    def __hash__(self):
        return hash((type(self).__name__, self.children))

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(map(repr, self.children))})"

    def __str__(self):
        return setup_text(self)


class Fuse(_Block):
    """Combine the outputs of several adapters with an AdapterFusion layer."""

    def __init__(self, *children: str):
        for child in children:
            if not isinstance(child, str):
                raise XlingError(
                    f"Fuse takes adapter names only, not {child!r}: Fuse(Stack(...)) and Fuse(Fuse(...)) are not supported"
                )
        if len(children) < 2:
            raise XlingError("Fuse needs at least two adapters")
        if len(set(children)) != len(children):
            raise XlingError(f"Fuse names an adapter twice: {children}")
        self.children = tuple(children)

    @property
    def name(self) -> str:
        """The fusion layer's name: its adapters, comma-separated, in order."""
        return ",".join(self.children)


class Stack(_Block):
    """Apply adapters one after another, each reading the previous one's output."""

    def __init__(self, *children: str | Fuse):
        for child in children:
            if isinstance(child, Stack):
                raise XlingError(
                    f"a Stack cannot contain another Stack; write Stack({', '.join(map(repr, children))}) flat"
                )
            if not isinstance(child, (str, Fuse)):
                raise XlingError(f"Stack takes adapter names and Fuse blocks, not {child!r}")
        if not children:
            raise XlingError("Stack needs at least one adapter")
        names = [n for c in children for n in ([c] if isinstance(c, str) else c.children)]
        if len(set(names)) != len(names):
            raise XlingError(f"Stack uses an adapter twice: {children}")
        self.children = tuple(children)


Setup = str | Stack | Fuse


def as_stack(setup: Setup) -> Stack:
    return setup if isinstance(setup, Stack) else Stack(setup)


def adapter_names(setup: Setup) -> list[str]:
    """Every adapter a setup uses, bottom to top."""
    return [n for c in as_stack(setup) for n in ([c] if isinstance(c, str) else c.children)]


def named_adapters(setup: Setup | None) -> list[str]:
    """What a result records of its setup: the adapters it holds by name, bottom to top, language adapters left out
    where it says which they are; a setup as shown (`Stack(qu, ner-en)`, `Mean(...)` of several) read from its
    text."""
    if isinstance(setup, Stack | Fuse):
        return [name for name in adapter_names(setup) if not name.startswith(LANG_PREFIX)]
    words = re.findall(r"[\w.-]+", str(setup or ""))
    return [w for w in dict.fromkeys(words) if w not in ("Stack", "Fuse", "Mean") and not w.startswith(LANG_PREFIX)]


def fusion_names(setup: Setup) -> list[str]:
    return [c.name for c in as_stack(setup) if isinstance(c, Fuse)]


MAX_NAME_BYTES = 100  # of a name's UTF-8: with every suffix xling adds (a run folder's, -candidate) it stays under 255


def check_name(name: str) -> str:
    if (
        not isinstance(name, str)
        or not name
        or not all(c.isalnum() or c in "-_" for c in name)
        or not name[0].isalnum()
    ):
        raise XlingError(
            f"invalid adapter name {shown(name)}: use letters, digits, '-' and '_', starting with a letter or digit"
        )
    if len(name.encode()) > MAX_NAME_BYTES:
        raise XlingError(f"the name {shown(name)} is {len(name.encode())} bytes long; at most {MAX_NAME_BYTES}")
    return name
