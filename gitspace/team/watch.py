"""Watching a work tree: outside edits become external ops, a burst at a time.

Invariants:
- Every op the watcher makes is ``Workspace.snapshot()``: one commit, source ``external``, made
  under the workspace lock, so it never interleaves with an op, restore, undo or switch, and it
  never repeats an outside edit an op already recorded (that path then equals the branch tip).
- A burst settles into one op: a flush runs ``debounce`` seconds after the last relevant event, or
  ``max_wait`` seconds after the first if the burst never stops. A flush that commits scans the
  whole tree, so once events stop the committed tree equals the disk, even if events were lost.
- Only the work tree is watched: the root folder itself, and each top-level folder but ``.git``
  and ``.gitspace`` recursively (one watch per folder as it appears; what a new folder already
  holds is looked at path by path), plus git's ``info/exclude``. git's own writes, and agents'
  worktrees inside ``.git``, never wake the watcher.
- Events under ``.gitspace`` and on gitspace's tmp files are dropped as they arrive;
  ignored paths (asked of git in batches, remembered until ignore rules change) are dropped before
  they can hold back a flush. A flush first compares only the paths it was told about with the
  branch tip, so gitspace's own writes cost no scan and make no commit.
- Files over the size cap are reported (once per size and mtime), never committed.
- All git work happens on one worker thread through one open workspace (its two ``git cat-file``
  processes, no more, however long it runs); ``stop`` commits what is pending and releases it all,
  and raises when that last commit failed.
- It runs only in a checkout gitspace owns (owner.py), never in the user's own.

The watcher never prints: it hands a ``WatchReport`` to ``on_report`` for every op, refusal or error.
"""

from __future__ import annotations

import logging
import os
import stat as statmod
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import extras
from ..core import userfiles
from ..core.transaction import entry_of
from ..errors import BadArguments, GitspaceError, PathRefused
from ..storage import ledger
from ..storage.files import TMP_NAME

if TYPE_CHECKING:
    from watchdog.events import FileSystemEvent

    from ..core.workspace import Workspace

_CACHE_LIMIT = 50_000  # remembered ignore verdicts; past this the cache starts over


@dataclass(frozen=True)
class WatchReport:
    """What the watcher did: ``committed`` an op, found files ``too_large``, or hit an ``error``."""

    kind: str
    text: str
    op: str | None = None
    commit: str | None = None
    files: tuple[str, ...] = ()


@dataclass
class WatchStats:
    """Counters for tests and benchmarks (read them, never rely on their timing)."""

    events: int = 0  # file-system events received
    dropped: int = 0  # paths under .git/.gitspace, gitspace tmp files, ignored paths
    flushes: int = 0  # settled batches looked at
    scans: int = 0  # full snapshots run (a batch that changed something, or an explicit flush)
    commits: int = 0


class _Request:
    """A caller waiting for the worker's next flush."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.report: WatchReport | None = None
        self.error: BaseException | None = None

    def finish(self, report: WatchReport | None, error: BaseException | None = None) -> None:
        self.report, self.error = report, error
        self.done.set()


class Watcher:
    """Turns outside edits under ``root`` into external ops until ``stop()``."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        author: str | None = None,
        debounce: float = 0.3,
        max_wait: float = 5.0,
        max_file_bytes: int = 1 << 20,
        on_report: Callable[[WatchReport], None] | None = None,
    ) -> None:
        if not 0 < debounce <= max_wait:
            raise BadArguments(
                f"The debounce ({debounce:g} s) must be positive and no longer than the maximum "
                f"wait ({max_wait:g} s).", hint="For example: debounce 0.3, max wait 5.")
        # None: the person whose checkout it is, by their git user.name (core/person.py).
        self.author = ledger.check_token("author", author) if author else None
        self.debounce = debounce
        self.max_wait = max_wait
        self.max_file_bytes = max_file_bytes
        self.on_report = on_report
        self.stats = WatchStats()
        with self._open(root) as ws:  # fails here, in the caller, if root is no workspace
            ws.require_owned("record outside edits")
            self.root: Path = ws.root
            self._exclude = str(ws.repo.commondir / "info" / "exclude")
        self._prefix = str(self.root) + os.sep
        self._cond = threading.Condition()
        self._dirty: set[str] = set()  # paths to look at in the next flush
        self._unsorted: dict[str, float] = {}  # path -> arrival, not yet asked of git-ignore
        self._full = False  # the next flush scans the tree whatever the paths say
        self._first: float | None = None  # arrival of the oldest pending event
        self._last: float | None = None  # arrival of the newest pending event
        self._not_before = 0.0  # after a failed flush: when to try again
        self._waiters: list[_Request] = []
        self._stopping = False
        self._ignored: dict[str, bool] = {}
        self._rules = 0  # bumped whenever ignore rules change: older verdicts are not cached
        self._large: dict[str, tuple[int, int]] = {}  # reported over-cap files: (size, mtime)
        self._ws: Workspace | None = None  # the worker thread's own workspace
        self._thread: threading.Thread | None = None
        self._observer: Any = None
        self._folders: dict[str, Any] = {}  # top-level folder -> its recursive watch
        self._handlers: tuple[Any, Any] | None = None  # (for the root, for the folders)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start watching; the first flush records whatever is already pending."""
        extras.require("watch")
        from watchdog.observers import Observer

        if self._thread is not None:
            raise GitspaceError("This watcher is already running.")
        _drop_shutdown_race_log()
        observer = Observer()
        top, below = _forwarder(self._on_top_event), _forwarder(self._on_event)
        self._handlers = (top, below)
        # The root alone, then each top-level folder but .git and .gitspace recursively: git's
        # own churn (objects, refs, every agent's worktree inside .git) never reaches us.
        observer.schedule(top, str(self.root), recursive=False, event_filter=_event_types())
        info = Path(self._exclude).parent
        if info.is_dir():  # info/exclude, which holds ignore rules too
            observer.schedule(below, str(info), recursive=False, event_filter=_event_types())
        self._observer = observer
        try:
            observer.start()  # the root's watch is in place: every new folder from now is seen
            for entry in os.scandir(self.root):
                if entry.is_dir(follow_symlinks=False) and entry.name not in self._folders:
                    try:
                        self._watch_folder(observer, entry.name, replace=False)
                    except FileNotFoundError:
                        pass  # deleted meanwhile
        except OSError as e:
            self._observer = None
            observer.stop()
            observer.join()
            raise GitspaceError(
                f"Cannot watch {self.root}: {e.strerror or e}.",
                hint="The system's inotify limits may be reached: raise fs.inotify.max_user_watches "
                     "and fs.inotify.max_user_instances, or stop other watchers.") from None
        with self._cond:
            self._full = True
            self._first = self._last = time.monotonic() - self.max_wait
        self._thread = threading.Thread(target=self._run, name="gitspace-watch", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 60.0) -> WatchReport | None:
        """Stop watching, commit everything pending, release every process and file.

        Raises GitspaceError, once everything is released, when that last commit failed: the
        edits are still on disk but not recorded.
        """
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout)
        thread, self._thread = self._thread, None
        if thread is None:
            return None
        request = _Request()
        with self._cond:
            self._stopping = True
            self._waiters.append(request)
            self._cond.notify()
        thread.join(timeout)
        then = f"Then record them with 'gitspace -C {self.root} snapshot'."
        if not request.done.is_set():
            raise GitspaceError(f"Stopped watching {self.root}, but recording the last edits did "
                                f"not finish within {timeout:g} s; they may not be recorded.",
                                hint=then)
        error = request.error
        if error is not None:
            known = error if isinstance(error, GitspaceError) else None
            reason = known.message if known else f"{type(error).__name__}: {error}"
            hint = known.hint if known else None
            raise GitspaceError(f"Stopped watching {self.root}, but the last edits are not "
                                f"recorded (they stay on disk): {reason}",
                                hint=f"{hint} {then}" if hint else then)
        return request.report

    def flush(self, timeout: float = 60.0) -> WatchReport | None:
        """Commit every pending outside change now (a full snapshot); its report, or None."""
        request = _Request()
        with self._cond:
            running = self._thread is not None and self._thread.is_alive() and not self._stopping
            if running:
                self._waiters.append(request)
                self._cond.notify()
        if not running:  # no worker to ask: use a workspace of our own, then close it
            with self._open(self.root) as ws:
                return self._flush(ws, set(), full=True)
        if not request.done.wait(timeout):
            raise GitspaceError(f"The watcher did not finish a flush within {timeout:g} s.")
        if request.error is not None:
            raise request.error
        return request.report

    def idle(self) -> bool:
        """True when no event is waiting to be looked at or committed."""
        with self._cond:
            return not (self._dirty or self._unsorted or self._full or self._waiters)

    def __enter__(self) -> Watcher:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        try:
            self.stop()
        except GitspaceError:
            if exc_type is None:  # never hide the error that is already on its way out
                raise

    # -- events (the observer's thread) ------------------------------------------------------

    def _watch_folder(self, observer: Any, name: str, replace: bool = True) -> None:
        """Watch top-level folder ``name`` recursively. Two threads may ask at once (start and
        the root's events): scheduling one path twice is harmless, watchdog keeps one watch."""
        if name in (".git", ".gitspace") or self._handlers is None:
            return
        if replace:  # a folder of that name came anew: its old watch follows the old folder
            self._unwatch_folder(observer, name)
        self._folders[name] = observer.schedule(self._handlers[1], str(self.root / name),
                                                recursive=True, event_filter=_event_types())

    def _unwatch_folder(self, observer: Any, name: str) -> None:
        watch = self._folders.pop(name, None)
        if watch is not None:
            try:
                observer.unschedule(watch)
            except KeyError:  # already gone with the observer's own shutdown
                pass

    def _on_top_event(self, event: FileSystemEvent) -> None:
        """An event in the root folder itself: top-level folders come and go with their watch."""
        observer = self._observer
        if observer is not None and event.is_directory:
            gone, came = os.fsdecode(event.src_path), os.fsdecode(getattr(event, "dest_path", ""))
            if event.event_type in ("deleted", "moved"):
                self._unwatch_folder(observer, os.path.basename(gone))
            new = came if event.event_type == "moved" else gone if event.event_type == "created" \
                else ""
            if new and os.path.dirname(new) == str(self.root) and os.path.isdir(new) \
                    and not os.path.islink(new):
                try:
                    self._watch_folder(observer, os.path.basename(new))
                except OSError as e:
                    self._emit(WatchReport("error", f"Cannot watch {new}: {e.strerror or e}; its edits "
                                               "are recorded at the next full scan only."))
                self._on_event(event)
                # What it held before its watch was in place (moved in, or written at once) is
                # looked at path by path, as events would have been: an op's own writes scan nothing.
                self._note(_files_under(new), events=0)
                return
        self._on_event(event)


    def _on_event(self, event: FileSystemEvent) -> None:
        self._note([event.src_path, getattr(event, "dest_path", "")])

    def _note(self, paths: list[bytes | str], events: int = 1) -> None:
        now = time.monotonic()
        with self._cond:
            self.stats.events += events
            wake = False
            for raw in paths:
                rel = self._relative(os.fsdecode(raw)) if raw else None
                verdict = None if rel is None else self._ignored.get(rel)
                if rel is None or verdict:
                    self.stats.dropped += 1 if raw else 0
                elif verdict is None:
                    self._unsorted.setdefault(rel, now)
                    wake = True
                else:
                    self._mark(rel, now)
                    wake = True
            if wake:
                self._cond.notify()

    def _relative(self, path: str) -> str | None:
        """The work-tree path an event is about, or None for paths the watcher never records."""
        if path == self._exclude:
            self._rules_changed()
            return None
        if not path.startswith(self._prefix):
            return None
        rel = path[len(self._prefix):].replace(os.sep, "/")
        parts = rel.split("/")
        if parts[0] == ".gitspace" or ".git" in parts:
            if rel == ".git/info/exclude":
                self._rules_changed()
            return None
        if TMP_NAME.fullmatch(parts[-1]):
            return None  # put_file's tmp file: its rename onto the real path is what counts
        if parts[-1] == ".gitignore":
            self._rules_changed()  # and the file itself is recorded like any other
        return rel

    def _rules_changed(self) -> None:
        """Forget every ignore verdict, and scan next: files may have become visible (or hidden)
        that no event will ever mention, even when an op made the change."""
        self._ignored.clear()
        self._rules += 1
        self._full = True
        self._mark(None, time.monotonic())

    def _mark(self, rel: str | None, when: float) -> None:
        if rel is not None:
            self._dirty.add(rel)
        self._first = when if self._first is None else min(self._first, when)
        self._last = when if self._last is None else max(self._last, when)

    def _due(self) -> float | None:
        if not (self._dirty or self._full) or self._first is None or self._last is None:
            return None
        return max(min(self._last + self.debounce, self._first + self.max_wait), self._not_before)

    # -- the worker thread -------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while self._step():
                pass
        finally:
            with self._cond:
                waiters, self._waiters = self._waiters, []
            for request in waiters:
                request.finish(None)
            self._close_workspace()

    def _step(self) -> bool:
        """Classify new paths or run one flush; False once the last flush before stopping ran."""
        batch: dict[str, float] = {}
        with self._cond:
            while not self._unsorted:
                now, due = time.monotonic(), self._due()
                if self._stopping or self._waiters or (due is not None and due <= now):
                    break
                self._cond.wait(None if due is None else due - now)
            if self._unsorted:  # classify first: a final flush must not miss late events
                batch, rules, self._unsorted = self._unsorted, self._rules, {}
            else:
                paths, full = self._dirty, self._full or self._stopping or bool(self._waiters)
                waiters, stopping = self._waiters, self._stopping
                self._dirty, self._full, self._waiters = set(), False, []
                self._first = self._last = None
        if batch:
            self._classify(batch, rules)
            return True
        self._flush_for(paths, full, waiters, stopping)
        return not stopping

    def _classify(self, batch: dict[str, float], rules: int) -> None:
        try:
            ignored = userfiles.ignored(self._workspace().repo, list(batch))
        except Exception:  # noqa: BLE001 — unknown means "look at it": the flush decides
            ignored, rules = set(), -1
        with self._cond:
            remember = rules == self._rules
            if remember and len(self._ignored) + len(batch) > _CACHE_LIMIT:
                self._ignored.clear()
            for rel, when in batch.items():
                skip = remember and rel in ignored
                if remember:
                    self._ignored[rel] = skip
                if skip:
                    self.stats.dropped += 1
                else:
                    self._mark(rel, when)

    def _flush_for(self, paths: set[str], full: bool, waiters: list[_Request],
                   stopping: bool) -> None:
        try:
            report = self._flush(self._workspace(), paths, full)
        except Exception as e:  # noqa: BLE001 — a long-running worker reports and carries on
            self._emit(WatchReport("error", _describe(e, retry=not stopping)))
            self._close_workspace()  # a broken git process or repository: start afresh
            if not stopping:
                with self._cond:
                    self._dirty |= paths
                    self._full = True
                    self._mark(None, time.monotonic())
                    self._not_before = time.monotonic() + self.max_wait
            for request in waiters:
                request.finish(None, e)
            return
        self._not_before = 0.0
        for request in waiters:
            request.finish(report)

    def _flush(self, ws: Workspace, paths: set[str], full: bool) -> WatchReport | None:
        self.stats.flushes += 1
        changed = self._examine(ws, paths)
        if not (changed or full):
            return None
        self.stats.scans += 1
        result = ws.snapshot()
        if result.op is None:
            return None
        self.stats.commits += 1
        ws.repo.maybe_pack()
        files = tuple(result.changed)
        shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        report = WatchReport("committed", f"Recorded outside edits as op {result.op}: {shown}.",
                        op=result.op, commit=result.commit, files=files)
        self._emit(report)
        return report

    def _examine(self, ws: Workspace, paths: set[str]) -> bool:
        """Does any of ``paths`` differ from the branch tip? Reports files over the cap.

        Only the given paths are read, so the echo of gitspace's own writes costs no scan.
        """
        if not paths:
            return False
        tree, repo, files = ws.tree(), ws.repo, ws.files
        changed = False
        large = []
        for rel in sorted(paths):
            try:
                st = files.stat(rel)  # never through a link: beneath one, a path is absent
            except PathRefused:
                continue  # a name gitspace never records (the snapshot says so)
            except OSError:
                changed = True  # cannot even look: let the snapshot decide and explain
                continue
            if st is not None and statmod.S_ISREG(st.st_mode) and st.st_size > self.max_file_bytes:
                if self._large.get(rel) != (st.st_size, st.st_mtime_ns):
                    self._large[rel] = (st.st_size, st.st_mtime_ns)
                    large.append(f"{rel} ({st.st_size:,} bytes)")
                continue
            self._large.pop(rel, None)
            if changed:
                continue
            current = repo.entry_at(tree, rel)
            if st is None:
                changed = current is not None
            elif statmod.S_ISDIR(st.st_mode):
                changed = current is not None and not current.is_tree
            else:
                try:
                    changed = entry_of(repo, files.read(rel), write=False) != current
                except (OSError, GitspaceError):
                    changed = True  # unreadable now: let the snapshot decide and explain
        if large:
            self._emit(WatchReport(
                "too_large",
                f"Not committed, over the {self.max_file_bytes:,}-byte cap: {'; '.join(large)}. "
                "Add them to .gitignore, or shrink them.",
                files=tuple(s.rsplit(" (", 1)[0] for s in large)))
        return changed

    # -- helpers -----------------------------------------------------------------------------

    def _open(self, root: str | os.PathLike[str]) -> Workspace:
        from ..api import open as open_ws

        return open_ws(root, external_author=self.author, max_file_bytes=self.max_file_bytes)

    def _workspace(self) -> Workspace:
        if self._ws is None:
            self._ws = self._open(self.root)
        return self._ws

    def _close_workspace(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            ws.close()

    def _emit(self, report: WatchReport) -> None:
        if self.on_report is not None:
            try:
                self.on_report(report)
            except Exception:  # noqa: BLE001 — e.g. a closed stdout: recording goes on
                pass


def _files_under(folder: str) -> list[bytes | str]:
    """Every non-folder entry below ``folder`` (symlinked folders are entries, not followed)."""
    found: list[bytes | str] = []
    for path, dirs, names in os.walk(folder):
        found += [os.path.join(path, n) for n in names]
        found += [os.path.join(path, d) for d in dirs if os.path.islink(os.path.join(path, d))]
    return found


def _describe(error: BaseException, *, retry: bool) -> str:
    then = " Will try again." if retry else " They stay on disk, not recorded."
    if isinstance(error, GitspaceError):
        return f"Could not record outside edits: {error}{then}"
    return f"Could not record outside edits ({type(error).__name__}: {error}).{then}"


def _event_types() -> list[type[FileSystemEvent]]:
    """Events that can mean a content change (no opens, closes or folder mtime updates)."""
    from watchdog.events import (
        DirCreatedEvent,
        DirDeletedEvent,
        DirMovedEvent,
        FileAttribEvent,
        FileCreatedEvent,
        FileDeletedEvent,
        FileModifiedEvent,
        FileMovedEvent,
    )

    return [FileCreatedEvent, FileModifiedEvent, FileAttribEvent, FileDeletedEvent, FileMovedEvent,
            DirCreatedEvent, DirDeletedEvent, DirMovedEvent]


def _forwarder(callback: Callable[[FileSystemEvent], None]) -> Any:
    """A watchdog handler that hands every event to ``callback``."""
    from watchdog.events import FileSystemEventHandler

    class Forward(FileSystemEventHandler):
        def dispatch(self, event: FileSystemEvent) -> None:
            callback(event)

    return Forward()


__all__ = ["WatchReport", "WatchStats", "Watcher"]


class _ShutdownRace(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


def _drop_shutdown_race_log() -> None:
    """watchdog 7 logs an *error* when its reader thread wakes after stop() (a harmless race in
    its own shutdown); drop exactly that record so a clean stop does not look like a failure."""
    log = logging.getLogger("watchdog.observers.inotify")
    if not any(isinstance(f, _ShutdownRace) for f in log.filters):
        log.addFilter(_ShutdownRace())
