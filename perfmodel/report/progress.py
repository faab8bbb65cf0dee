"""Progress bars for long runs (sweep, compare, check, accuracy, corpus runs) on stderr.

Shown only where stderr is a terminal and the output is not ``--json`` (a CI log or a pipe stays quiet), and
transient: the bar is gone when the run ends, so what is printed after it is unchanged.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console


def wants_progress(console: Console, json_output: bool) -> bool:
    return not json_output and console.is_terminal


@contextmanager
def progress_bar(description: str, console: Console, enabled: bool) -> Iterator[Callable[..., None]]:
    """Yields ``update(done, total, what="")``; a no-op when ``enabled`` is false."""
    if not enabled:
        yield lambda done, total, what="": None
        return
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    with Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.fields[what]}"),
                  console=console, transient=True) as progress:
        task = progress.add_task(description, total=None, what="")

        def update(done: int, total: int, what: str = "") -> None:
            progress.update(task, completed=done, total=total, what=what)

        yield update
