"""git's lock-file protocol: create ``<name>.lock`` exclusively, write it, rename it over ``<name>``;
and gitspace's own process locks (``flocked``).

Invariant: whoever holds the lock file is the only writer of that file, gitspace or git alike;
the lock is taken with a bounded wait and never taken from its owner. A lock is broken (by crash
recovery only) when it is provably nobody's: ``git_running_in`` says whether a live git process
may own one. An ``flocked`` lock is held by an open file, so the kernel releases it when its
process dies: it never goes stale.

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
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import faults

# git commands that read or pack objects and never take a ref, index or HEAD lock.
_NEVER_LOCKS = {b"cat-file", b"repack", b"pack-objects"}


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


def replace(path: Path, data: bytes, wait: float = 5.0, *, point: str | None = None,
            under_lock: Callable[[], None] | None = None, private: bool = False) -> None:
    """Write ``data`` to ``path`` under its lock file. ``under_lock`` runs once the lock is held
    (a compare, a reflog line): if it raises, ``path`` is left alone. ``point`` names the fault
    point (``faults``) of this write, hit once the lock is held."""
    lock = path.with_name(path.name + ".lock")
    fd = acquire(lock, wait)
    try:
        with os.fdopen(fd, "wb") as out:
            if point is not None:
                faults.hit(point)
            if under_lock is not None:
                under_lock()
            out.write(data)
        rename_over(lock, path, private=private)
    except BaseException:
        lock.unlink(missing_ok=True)
        raise


@contextmanager
def flocked(base: Path, rel: str, wait: float, busy: Exception, poll: float = 0.002
            ) -> Iterator[None]:
    """Hold an exclusive ``flock`` on state file ``base/rel`` (created if missing, never through
    a link on the way: ``statefiles.open_lock``) while the block runs; raise ``busy`` after
    ``wait`` seconds of another holder."""
    from . import statefiles

    fd = statefiles.open_lock(base, rel)
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


def git_running_in(folders: Iterable[Path]) -> bool | None:
    """Is a git process working in one of ``folders``? None when the system cannot say (no
    /proc). Long-lived ``git cat-file`` readers (GitPython's) and repacks never take these locks:
    they do not count.

    git holds some locks for as long as a person keeps its editor open (``git commit -a``), with
    no file descriptor left open on them, so the only trace of the owner is the process itself.
    """
    proc = Path("/proc")
    if not (proc / "self").exists():
        return None
    places = [str(Path(f).resolve()) for f in folders]
    me = os.getpid()
    for entry in os.scandir(proc):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if (proc / entry.name / "comm").read_text().strip() != "git":
                continue
            argv = (proc / entry.name / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(proc / entry.name / "cwd")
        except OSError:
            continue  # gone meanwhile, or not ours to look at
        if _NEVER_LOCKS.intersection(argv):
            continue
        if any(cwd == p or cwd.startswith(p + os.sep) for p in places):
            return True
    return False
