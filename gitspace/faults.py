"""Fault points: named places where a test can make one operation fail on purpose.

Invariant: with nothing armed, ``hit`` costs one truth test of an empty dict and never fails, so
the points can sit on the op's hot path. A point is armed only by ``inject``, a context manager
the tests use; nothing else (no environment variable, no config) can arm one. Armed with a
function instead of an error, a point runs it at that instant: another writer acting in the
window between two of gitspace's calls.

Every point names one call whose failure the caller must survive: the op fails with an expected
error and leaves ref, index and files exactly as before (or, past the ref move, rolls back).
``tests/test_faults.py`` arms each point with each error for every op that reaches it.

    object.write     writing a loose object (blob, tree, commit, tag), after its tmp file exists
    ref.update       a ref's compare-and-swap, after its lock is taken (create, move or delete)
    reflog.write     appending a ref's (or HEAD's) reflog line, before the ref moves
    head.update      replacing HEAD (switch), after HEAD.lock is taken
    index.store      replacing .git/index (or writing a shared index), after index.lock is taken
    file.write       writing a work-tree file's bytes (its tmp file), or a symbolic link
    file.chmod       setting a work-tree file's mode (on its tmp file)
    file.fsync       flushing a work-tree file or folder (a durable Files only)
    file.replace     renaming a temp file over a work-tree path
    file.remove      removing a work-tree file an op deletes
    journal.write    writing the op journal (its tmp file)
    journal.remove   removing the op journal after the op (or after its rollback)
"""

from __future__ import annotations

import errno as errnos
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

POINTS = frozenset({
    "object.write", "ref.update", "reflog.write", "head.update", "index.store", "file.write",
    "file.chmod", "file.fsync", "file.replace", "file.remove", "journal.write", "journal.remove",
})


class Injection:
    """One armed point: fail the hits after the first ``after``, ``times`` times (None: always).
    (A plain class, not a dataclass: this module is imported by every short-lived process.)"""

    def __init__(self, point: str, error: BaseException | Callable[[], None], after: int = 0,
                 times: int | None = 1) -> None:
        self.point, self.error, self.after, self.times = point, error, after, times
        self.hits = 0  # every time the point was reached while armed
        self.fired = 0  # how many of those hits failed


_armed: dict[str, Injection] = {}


def hit(point: str) -> None:
    """Raise the fault armed at ``point`` (or run its function), if there is one and it is due."""
    if not _armed:
        return
    armed = _armed.get(point)
    if armed is None:
        return
    armed.hits += 1
    if armed.hits <= armed.after or armed.times is not None and armed.fired >= armed.times:
        return
    armed.fired += 1
    if isinstance(armed.error, BaseException):
        raise armed.error
    armed.error()


def os_error(code: int, point: str) -> OSError:
    """The OSError the system would raise for ``code`` (ENOSPC, EACCES, EIO, EINTR...)."""
    return OSError(code, f"{os.strerror(code)} (injected at {point})")


@contextmanager
def inject(point: str, error: int | BaseException | Callable[[], None] = errnos.EIO, *,
           after: int = 0, times: int | None = 1) -> Iterator[Injection]:
    """Arm ``point`` for the block: ``error`` is an errno (raised as OSError), an exception, or a
    function to run there."""
    if point not in POINTS:
        raise ValueError(f"unknown fault point {point!r}; known: {', '.join(sorted(POINTS))}")
    if point in _armed:
        raise ValueError(f"fault point {point!r} is already armed")
    exc = os_error(error, point) if isinstance(error, int) else error
    armed = _armed[point] = Injection(point, exc, after, times)
    try:
        yield armed
    finally:
        del _armed[point]
