"""How the CLI shows how far a long job got: what the library reports (``gitspace/progress.py``)
drawn on stderr, never on stdout (which ``--json`` and ``--returns`` own).

- On a terminal: a rich bar per kind of unit the job reports (``model calls``, ``commits
  replayed``, ``log entries summarised``...), with its count, its total and the time left when
  the job knows its total, a spinner and the time so far when it does not. The bars go when
  the job ends; lines the command prints meanwhile scroll above them.
- Anywhere else (a pipe, a file, CI): plain lines, ``gitspace: LABEL: DONE of TOTAL (P%), about
  T left``, each time another tenth of the total is done (a job without a total: at 100, 200,
  500, 1,000...), and at least every ``PROGRESS_EVERY`` seconds while it moves.

A job whose total is under ``PROGRESS_FROM`` units shows nothing (it is over before a bar is worth
drawing).

rich is imported when a bar is first drawn, never before: a job into a pipe never loads it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .. import progress as reporting

PROGRESS_FROM = 100  # units: a job that reports fewer than these shows no progress
PROGRESS_EVERY = 30.0  # seconds: the longest a plain line waits while the job moves


@dataclass
class _Task:
    started: float
    done: float = 0.0
    total: float | None = None
    said: float = -1.0  # the last milestone a plain line said
    said_at: float = 0.0
    bar: Any = field(default=None)  # the rich task id, on a terminal


def time_left(task: _Task, now: float) -> str | None:
    """The time left at the rate so far, in words (None: too early to tell)."""
    if task.total is None or task.done <= 0 or now <= task.started:
        return None
    rest = (task.total - task.done) * (now - task.started) / task.done
    if rest < 60:
        return f"{max(rest, 1):.0f} s"
    if rest < 3600:
        return f"{rest / 60:.0f} min"
    return f"{rest / 3600:.1f} h"


def plain_line(label: str, task: _Task, now: float) -> str:
    if task.total is None:
        return f"gitspace: {label}: {task.done:,.0f} so far ({now - task.started:.0f} s)"
    share = 100 * task.done / task.total
    rest = time_left(task, now)
    return (f"gitspace: {label}: {task.done:,.0f} of {task.total:,.0f} ({share:.0f}%)"
            + (f", about {rest} left" if rest and task.done < task.total else ""))


def _milestone(task: _Task) -> float:
    """Which milestone ``task`` has reached: the tenth of its total, or for no total the
    largest of 100, 200, 500, 1,000, 2,000... it has passed."""
    if task.total is not None:
        return float(int(10 * task.done / task.total))
    step, found = 100.0, 0.0
    while step <= task.done:
        for k in (1, 2, 5):
            if k * step <= task.done:
                found = k * step
        step *= 10
    return found


def _err() -> Any:
    from .render import err

    return err


class Shown:
    """The listener ``shown`` installs: one task per label, drawn as the module says."""

    def __init__(self, terminal: bool) -> None:
        self.terminal = terminal
        self.tasks: dict[str, _Task] = {}
        self.bars: Any = None

    def hear(self, event: reporting.ProgressEvent) -> None:
        if event.kind != "progress":
            return
        label = event.message or "done"
        now = time.monotonic()
        task = self.tasks.setdefault(label, _Task(now))
        task.done, task.total = event.done, event.total
        if task.total is not None and task.total < PROGRESS_FROM:
            return  # (over before a bar is worth drawing)
        if self.terminal:  # (with no total: a spinner and the count, from the first report)
            self._draw(label, task)
            return
        reached = _milestone(task)
        if reached > task.said or (now - task.said_at >= PROGRESS_EVERY and task.done > 0):
            task.said, task.said_at = reached, now
            sys.stderr.write(plain_line(label, task, now) + "\n")
            sys.stderr.flush()

    def _draw(self, label: str, task: _Task) -> None:
        if self.bars is None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bars = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TextColumn("left"), TimeRemainingColumn(),
                                 TextColumn("elapsed"), TimeElapsedColumn(),
                                 console=_err(), transient=True,
                                 # Lines for stdout go above the bars only when stdout is this
                                 # terminal too: into a pipe they stay stdout's.
                                 redirect_stdout=sys.stdout.isatty())
            self.bars.start()
        if task.bar is None:
            task.bar = self.bars.add_task(label, total=task.total)
        self.bars.update(task.bar, completed=task.done, total=task.total)

    def stop(self) -> None:
        if self.bars is not None:
            self.bars.stop()
            self.bars = None


@contextmanager
def shown(enabled: bool = True) -> Iterator[Shown | None]:
    """Show the progress the library reports while the block runs (``enabled`` False: none,
    as for a caller that asked for quiet)."""
    if not enabled:
        yield None
        return
    view = Shown(sys.stderr.isatty())  # (rich is imported when a bar is drawn, not before)
    try:
        with reporting.listening(view.hear):
            yield view
    finally:
        view.stop()
