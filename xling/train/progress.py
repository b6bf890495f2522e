"""Where the training loop reports: a `TrainingProgress` (the command line's bar lives in `xling.cli.progress`)."""

from __future__ import annotations

import sys
from typing import Protocol


class TrainingProgress(Protocol):
    """Where the loop reports: a progress bar in the command line (`xling.cli.progress`), text otherwise."""

    def start(self, title: str, total: int, done: int) -> None: ...

    def advance(self, done: int, info: str) -> None: ...

    def note(self, text: str) -> None: ...

    def stop(self) -> None: ...


class TextProgress:
    """Notes as plain lines on stderr, no bar: the default outside the command line."""

    def start(self, title: str, total: int, done: int) -> None:
        pass

    def advance(self, done: int, info: str) -> None:
        pass

    def note(self, text: str) -> None:
        print(text, file=sys.stderr)

    def stop(self) -> None:
        pass


class Silent(TextProgress):
    """The other processes of a distributed run say nothing."""

    def note(self, text: str) -> None:
        pass
