"""Rich progress displays shared by the commands."""

from __future__ import annotations

from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn


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
