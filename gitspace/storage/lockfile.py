"""git's lock-file protocol: create ``<name>.lock`` exclusively, write it, rename it over ``<name>``.

Invariant: whoever holds the lock file is the only writer of that file, gitspace or git alike;
the lock is taken with a bounded wait and never taken from its owner.
"""

from __future__ import annotations

import os
import time
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


def replace(path: Path, data: bytes, wait: float = 5.0) -> None:
    """Write ``data`` to ``path`` under its lock file (no compare: see GitRepo.cas_ref for that)."""
    lock = path.with_name(path.name + ".lock")
    fd = acquire(lock, wait)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(lock, path)
    except BaseException:
        lock.unlink(missing_ok=True)
        raise
