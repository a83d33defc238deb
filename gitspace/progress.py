"""Progress and messages a long call reports while it runs, and the one listener that hears them.

Invariant: reporting never changes what a call does or returns. A front end that can show
progress (the MCP server: ``notifications/progress`` and log messages) listens for the length of
one call with ``listening``; every report made on that thread meanwhile (a constraint script's
progress lines, a built-in's own reports) goes to that listener, and with no listener a report
costs one context-variable lookup. A listener must not raise; if it does, the report is dropped.

This is an observer, not a parameter: nothing below the front end reads it back, so it can never
smuggle identity or options into a call (those are values handed down, core/workspace.py).
How a constraint script reports is part of the script contract (tools/script_header.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

LEVELS = ("debug", "info", "notice", "warning", "error")  # what a script may log at
MESSAGE_CAP = 500  # characters of one message; the rest is cut


@dataclass(frozen=True)
class ProgressEvent:
    """One report: ``progress`` (with ``done``, maybe ``total``) or ``log`` (with ``level``)."""

    kind: str
    message: str = ""
    done: float = 0.0
    total: float | None = None
    level: str = "info"


Listener = Callable[[ProgressEvent], None]
_listener: ContextVar[Listener | None] = ContextVar("gitspace_progress", default=None)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send this thread's reports to ``listener`` until the block ends."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def active() -> bool:
    """Is anyone listening (so that work only reports need can be skipped otherwise)?"""
    return _listener.get() is not None


def emit(event: ProgressEvent) -> None:
    listener = _listener.get()
    if listener is None:
        return
    try:
        listener(event)
    except Exception:  # an observer's failure must never fail the call it observes
        pass


def report(done: float, total: float | None = None, message: str = "") -> bool:
    """``done`` of ``total`` units (any unit: bytes, entries, ops) are done. False, and nothing
    reported, when the numbers make no sense (negative, not finite, a total of 0)."""
    if not math.isfinite(done) or done < 0 or (total is not None and not (
            math.isfinite(total) and total > 0)):
        return False
    emit(ProgressEvent("progress", message[:MESSAGE_CAP], done, total))
    return True


def log(level: str, message: str) -> bool:
    """A message for the person watching the call; False when ``level`` is not one of LEVELS."""
    if level not in LEVELS:
        return False
    emit(ProgressEvent("log", message[:MESSAGE_CAP], level=level))
    return True
