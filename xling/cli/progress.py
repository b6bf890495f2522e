"""Rich progress displays shared by the commands."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


@contextmanager
def step_progress(title: str, total_steps: int):
    """Yields an `on_step(description)` callback that advances one step per call."""
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, transient=True) as progress:
        task = progress.add_task(title, total=total_steps)
        started = False

        def on_step(description: str) -> None:
            nonlocal started
            if started:
                progress.advance(task)
            started = True
            progress.update(task, description=f"{title}: {description}")

        yield on_step
        progress.update(task, completed=total_steps)


class RateColumn(ProgressColumn):
    """What is done per second, in the bar's unit (`lines/s`), once there is a rate to show."""

    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.1f} {task.fields['unit']}/s", style="progress.data.speed")


def counted_bar(
    items: Iterable, total: int, title: str, console: Console, unit: str = "items", size: Callable = lambda _: 1
) -> Iterator:
    """Pass `items` through, advancing a bar on `console` by each one's `size` in `unit`s (lines, sentences), with
    the rate and the time left; gone when they are."""
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[unit]},"),
        RateColumn(),
        TimeRemainingColumn(),
        TextColumn("left"),
    )
    with Progress(*columns, console=console, transient=True, redirect_stdout=False, redirect_stderr=False) as bar:
        task = bar.add_task(title, total=total, unit=unit)
        for item in items:
            yield item
            bar.advance(task, size(item))


class TrainingBar:
    """The training loop's progress (`xling.train.progress.TrainingProgress`) as a rich bar with notes above it."""

    def __init__(self, console: Console):
        self.console = console
        self.bar: Progress | None = None

    def start(self, title: str, total: int, done: int) -> None:
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            TextColumn("elapsed,"),
            TimeRemainingColumn(),
            TextColumn("left"),
        )
        self.bar = Progress(*columns, console=self.console, disable=not self.console.is_terminal)
        self.bar.start()
        self.task = self.bar.add_task(title, total=total, completed=done, info="")

    def advance(self, done: int, info: str) -> None:
        self.bar.update(self.task, completed=done, info=info)

    def note(self, text: str) -> None:
        self.console.print(text, highlight=False)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
