"""What changed in the work tree since the last scan, as the resident recorder's watcher saw it,
so that a shell command's end needs no ``git status`` (``events.Options.changed``).

Invariants:
- The hint is never short: when the watcher cannot vouch for every change since a scan began
  (watchdog is not installed, the watch could not be set up or was set up after that scan,
  the kernel dropped events, or an event did not arrive in time), ``since`` answers None and the
  recorder asks git, as a hook in its own process does.
- Everything the kernel reported before the question was asked has been counted when it is
  answered: one recursive watch of the checkout (one queue of events, in order), and a barrier,
  a file written under the checkout's git dir and awaited in that queue, so an event queued
  before it was read first.
- Paths are the work tree's, relative to its root, nothing under ``.git``; a folder created or
  moved in stands for everything in it (each of its files is named, read off the disk then), one
  moved or removed for everything the tree held there (the recorder's ``_hinted``).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from .home import FOLDER

BARRIER_WAIT = 0.5  # seconds a question waits for the watcher to catch up, before asking git
# What can change a file as git sees it (a read, opening or closing it unwritten, cannot).
CHANGES = ("created", "modified", "deleted", "moved", "closed", "attrib")


class Watcher:
    """A checkout's watcher: ``start``, then ``mark`` and ``since`` (see the module docstring)."""

    def __init__(self, root: Path, gitdir: Path) -> None:
        self.root, self.gitdir = root, gitdir
        self.lock = threading.Lock()
        self.seen = 0  # events counted so far
        self.changed: dict[str, int] = {}  # path -> the count at its latest change
        self.usable_from: int | None = None  # the watch holds from this count on (None: never)
        self.barriers: dict[str, threading.Event] = {}
        self.observer: object | None = None
        self.base = os.path.realpath(root)
        self.inside = os.path.realpath(gitdir / FOLDER)

    def start(self) -> None:
        """Watch the checkout (in the background: a watch of 1,000 folders takes a moment)."""
        threading.Thread(target=self._start, daemon=True).start()

    def _start(self) -> None:
        try:
            from watchdog.events import FileSystemEventHandler
            from watchdog.observers import Observer
        except ImportError:
            return  # (the watch extra is not installed: every scan asks git)
        watcher = self

        class Handler(FileSystemEventHandler):  # type: ignore[misc]
            def on_any_event(self, event: object) -> None:
                watcher._event(event)

        import logging

        class Dropped(logging.Handler):
            """watchdog says it when the kernel dropped events: nothing is vouched for then."""

            def emit(self, record: logging.LogRecord) -> None:
                if "overflow" in record.getMessage().lower():
                    with watcher.lock:
                        watcher.usable_from = None

        for name in ("watchdog.observers.inotify", "watchdog.observers.inotify_c"):
            logging.getLogger(name).addHandler(Dropped())
        try:
            observer = Observer()
            observer.schedule(Handler(), self.base, recursive=True)
            observer.start()
        except (OSError, RuntimeError):
            return  # (out of inotify watches, say: every scan asks git)
        self.observer = observer
        with self.lock:
            self.usable_from = self.seen

    def _event(self, event: object) -> None:
        kind = getattr(event, "event_type", "")
        paths = [getattr(event, "src_path", ""), getattr(event, "dest_path", "")]
        if kind not in CHANGES:
            return
        with self.lock:
            self.seen += 1
            if any(isinstance(p, bytes) for p in paths):
                self.usable_from = None  # a name it could not decode: nothing is vouched for
                return
            for path in paths:
                if not path:
                    continue
                if path.startswith(self.inside + os.sep):  # a barrier of ours
                    waiting = self.barriers.get(os.path.basename(path))
                    if waiting is not None:
                        waiting.set()
                    continue
                rel = self._relative(path)
                if rel is None:
                    continue
                self.changed[rel] = self.seen
                if getattr(event, "is_directory", False) and kind in ("created", "moved") and \
                        path == (getattr(event, "dest_path", "") or path):
                    for inner in _files_below(path):
                        inner_rel = self._relative(inner)
                        if inner_rel is not None:
                            self.changed[inner_rel] = self.seen

    def _relative(self, path: str) -> str | None:
        """``path`` relative to the work tree; None for one outside it or under ``.git``."""
        rel = os.path.relpath(path, self.base)
        if rel == "." or rel.startswith(os.pardir) or rel.split(os.sep)[0] == ".git":
            return None
        return rel.replace(os.sep, "/")

    def mark(self) -> int | None:
        """The count of events up to now, once the watcher has read every event the kernel
        queued before this call (None: it could not vouch for that)."""
        if self.observer is None:
            return None
        name = f"barrier-{os.getpid()}-{os.urandom(4).hex()}"
        arrived = threading.Event()
        with self.lock:
            self.barriers[name] = arrived
        from ...storage import statefiles

        try:
            statefiles.write(self.gitdir, f"{FOLDER}/{name}", b"")
            ok = arrived.wait(BARRIER_WAIT)
            statefiles.remove(self.gitdir, f"{FOLDER}/{name}")
        except (OSError, statefiles.StateRefused):
            ok = False
        with self.lock:
            self.barriers.pop(name, None)
            return self.seen if ok and self.usable_from is not None else None

    def since(self, mark: int | None) -> frozenset[str] | None:
        """The paths changed after ``mark`` (a count ``mark`` returned): None when the watch did
        not hold all that time."""
        with self.lock:
            if mark is None or self.usable_from is None or mark < self.usable_from:
                return None
            return frozenset(p for p, at in self.changed.items() if at > mark)

    def forget(self, mark: int) -> None:
        """Drop what changed at or before ``mark`` (a scan since has looked at it)."""
        with self.lock:
            self.changed = {p: at for p, at in self.changed.items() if at > mark}


def _files_below(folder: str) -> list[str]:
    """Every file under ``folder`` (a folder just created or moved in: its files may have been
    written before the watch of it began), never through a link."""
    found = []
    for parent, dirs, names in os.walk(folder):
        found += [os.path.join(parent, n) for n in names]
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(parent, d))]
    return found
