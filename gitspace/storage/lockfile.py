"""git's lock-file protocol: create ``<name>.lock`` exclusively, write it, rename it over ``<name>``;
and gitspace's own process locks (``flocked``).

Invariant: whoever holds the lock file is the only writer of that file, gitspace or git alike;
the lock is taken with a bounded wait and never taken from its owner. An ``flocked`` lock is
held by an open file, so the kernel releases it when its process dies: it never goes stale.

``private``: a repository nobody else reads (replay's scratch) has the old file unlinked before
the rename. ext4 writes a file's data out to disk when it is renamed over another one (its
``auto_da_alloc`` rule, meant to save naive writers from a crash), about 2 ms a rename on these
machines; an op renames three files over others (ref, index, work-tree file). Everywhere else the
rename stays atomic: a reader always finds the old file or the new one.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class Locked(Exception):
    """Another process held the lock file for the whole wait."""

    def __init__(self, lock: Path) -> None:
        super().__init__(str(lock))
        self.lock = lock


def acquire(lock: Path, wait: float = 5.0) -> int:
    """An open descriptor of the newly created ``lock``; Locked after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            if time.monotonic() > deadline:
                raise Locked(lock) from None
            time.sleep(0.005)


def rename_over(source: Path | str, target: Path | str, *, private: bool = False) -> None:
    """Rename ``source`` to ``target``, replacing it (see the module docstring for ``private``)."""
    if private:
        try:
            os.unlink(target)
        except FileNotFoundError:
            pass
    os.replace(source, target)


def replace(path: Path, data: bytes, wait: float = 5.0, *, private: bool = False) -> None:
    """Write ``data`` to ``path`` under its lock file (no compare: see GitRepo.cas_ref for that)."""
    lock = path.with_name(path.name + ".lock")
    fd = acquire(lock, wait)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        rename_over(lock, path, private=private)
    except BaseException:
        lock.unlink(missing_ok=True)
        raise


@contextmanager
def flocked(path: Path, wait: float, busy: Exception, poll: float = 0.002) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing, never through a link) while
    the block runs; raise ``busy`` after ``wait`` seconds of another holder."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise busy from None
                time.sleep(poll)
        yield
    finally:
        os.close(fd)
