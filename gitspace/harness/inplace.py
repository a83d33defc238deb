"""Recording a harness's calls in a person's own checkout: the hook's door, kept light.

``route`` decides where a hook event goes: a checkout gitspace owns is ``record``'s; a person's
own checkout where ``gitspace hooks install`` turned recording on is recorded in place
(``inplace_record``: what is read, written and never touched, and why); anywhere else the hook
says once, plainly, that it records nothing there. The before hook of a file tool runs here
whole: it keeps what the call's files hold as loose blobs, with the standard library and one
``git ls-files`` (is the file ignored, or a filter's?), and imports nothing heavier.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core import exclude
from ..errors import FileRefused, GitspaceError, LockTimeout, PathRefused
from ..storage import bounds, loose, privateindex, statefiles
from ..storage.files import Files
from . import state
from .events import Event, NothingRecorded, Options, Recorded
from .prepare import check_cwd, relative, running

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..storage.gitrepo import GitRepo
    from .inplace_record import Recorder
    from .inplace_undo import Taken

RECORDING = "recording"  # <git dir>/gitspace/inplace/recording: which harnesses record here
INTERRUPTED = "a hook call was interrupted before it finished"


# -- turning it on ---------------------------------------------------------------------------


def recording(gitdir: Path) -> list[str]:
    """The harnesses recorded in place in this checkout (``gitspace hooks install`` here)."""
    try:
        data = bounds.load_state(statefiles.read(gitdir, f"gitspace/inplace/{RECORDING}") or b"[]")
    except (OSError, ValueError, statefiles.StateRefused):
        return []
    found = data.get("harnesses") if isinstance(data, dict) else None
    return [h for h in found if isinstance(h, str)] if isinstance(found, list) else []


def set_recording(gitdir: Path, harness: str, on: bool) -> None:
    from ..core import line

    names = [h for h in recording(gitdir) if h != harness] + ([harness] if on else [])
    if not names:
        (_folder(gitdir) / RECORDING).unlink(missing_ok=True)
        return
    line.write_state(gitdir, RECORDING, json.dumps({"harnesses": sorted(set(names))}).encode())


def route(event: Event, start: Path, options: Options, *, asked: bool = False) -> Recorded | None:
    """Handle ``event`` here when ``start`` is in a person's own checkout; None when the
    checkout is gitspace's own (``record`` handles it there). ``asked``: a person ran
    ``gitspace record`` (no need to have turned recording on first)."""
    from ..core import owner
    from ..errors import NotAWorkspace
    from ..storage.gitrepo import GitRepo

    try:
        repo = GitRepo.locate(start)
    except NotAWorkspace as e:
        if options.quiet_outside:
            return Recorded()
        raise NothingRecorded(f"{start} is not in a git repository, so gitspace records nothing "
                              f"here.", hint=e.hint) from None
    try:
        if owner.known_owned(repo.root, repo.gitdir, repo.commondir):
            return None
        if event.agent in recording(repo.gitdir):
            return handle(event, repo, options)
        if owner.owns(repo):
            return None
        if asked:
            return handle(event, repo, options)
        if options.quiet_outside or event.kind == "ignored":
            return Recorded()
        from .calls import title

        raise NothingRecorded(
            f"gitspace records nothing in {repo.root}: recording {title(event.agent)} in place "
            "is not turned on in this checkout.",
            hint=f"To record here, run 'gitspace hooks install {event.agent}' in it; otherwise "
                 "remove gitspace's hook from this checkout's settings.")
    finally:
        repo.close()


def undo_op(repo: GitRepo, op_id: str, options: Options) -> Taken:
    """``gitspace undo --op`` in the person's checkout: work-tree files only (inplace_undo)."""
    return _take_back(repo, Event("undo", "gitspace", cwd=str(repo.root), extra={"op": op_id}),
                      options)


def rewind(repo: GitRepo, target: str, every_file: bool, options: Options) -> Taken:
    """``gitspace rewind TURN|OP [--all]`` in the person's checkout (inplace_undo)."""
    return _take_back(repo, Event("rewind", "gitspace", cwd=str(repo.root),
                                  extra={"target": target, "all": every_file}), options)


def _take_back(repo: GitRepo, event: Event, options: Options) -> Taken:
    from .inplace_undo import Taken, take_back

    taken = handle(event, repo, options, act=take_back).taken
    assert isinstance(taken, Taken)
    return taken


def handle(event: Event, repo: GitRepo, options: Options,
           act: Callable[[Recorder], Any] | None = None) -> Recorded:
    """Apply one hook event to the person's checkout ``repo`` (recording is on there); ``act``
    is what a command the person runs (undo, rewind) does on the line, under the lock: what it
    returns is the outcome's ``taken``. A refusal of such a command changed nothing, so it
    leaves the checkout as it found it (nothing more to catch up on than before)."""
    check_cwd(repo.root, event)
    if event.kind == "ignored":
        return Recorded()
    if event.kind == "before" and event.call is not None:
        announce(repo.root, repo.gitdir, repo.commondir, event, options)
        return Recorded()
    from ..core.writer import Writer
    from .inplace_record import Recorder

    writer = Writer(repo)  # (its folder, <git dir>/gitspace, is never a link: statefiles)
    busy = LockTimeout(f"Another gitspace hook held {writer.state_dir / 'lock'} for "
                       f"{options.lock_timeout:.0f} s.", hint="The next call records this one.")
    mark = _mark_running(repo.gitdir)  # a hook killed from here on leaves it for the next
    try:
        # The writer's lock: a change of the line a killed hook cut short (an undo's files) is
        # finished from its journal first.
        with writer.locked(options.lock_timeout, busy):
            caught_up = state.missed(repo.gitdir) or _killed(repo.gitdir, mark)
            state.mark_missed(repo.gitdir, INTERRUPTED)  # cleared once this call is recorded
            try:
                outcome = Recorder(writer, event, options, caught_up, act).run()
            except GitspaceError:
                if act is None:
                    raise
                if caught_up:  # (a refusal changed nothing: as much to catch up on as before)
                    state.mark_missed(repo.gitdir, caught_up)
                else:
                    state.clear_missed(repo.gitdir)
                raise
            except BaseException as e:
                state.mark_missed(repo.gitdir, f"{type(e).__name__}: {e}")
                raise
            state.clear_missed(repo.gitdir)
    finally:
        mark.unlink(missing_ok=True)
    if event.kind == "stop":
        _background_gc(repo)
    return outcome


def _background_gc(repo: GitRepo) -> None:
    """Start ``gitspace gc`` on its own at a turn's end, at most once a day (``gc --auto``
    decides the same way)."""
    from ..core import linegc

    if not linegc.due(repo):
        return
    import subprocess
    import sys

    linegc.ran(repo)  # (before it starts: two turn ends at once start one)
    subprocess.Popen([sys.executable, "-m", "gitspace", "-C", str(repo.root), "gc"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, cwd=repo.root)


def _mark_running(gitdir: Path) -> Path:
    mark = state.folder(gitdir, "running") / str(os.getpid())
    os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644))
    return mark


def _killed(gitdir: Path, mine: Path) -> str | None:
    """Did a hook die recording (its process gone, its mark left)? Its marks are cleared."""
    found = None
    for mark in mine.parent.iterdir():
        if mark == mine or not mark.name.isdigit():
            continue
        try:
            os.kill(int(mark.name), 0)
            continue  # alive: still waiting for the lock
        except ProcessLookupError:
            found = INTERRUPTED
        except OSError:
            continue
        mark.unlink(missing_ok=True)
    return found


def begin(repo: GitRepo, agent: str, options: Options) -> Recorded:
    """Start (or catch up) the line now, as a turn's start would: what ``hooks install`` does,
    so the first call of the harness finds the line ready."""
    return handle(Event("scan", agent, cwd=str(repo.root)), repo, options)


def announce_if_recording(event: Event, start: Path, options: Options) -> Recorded | None:
    """The before hook's fast path in a person's checkout recorded in place (found without
    starting git); None when that cannot be told this cheaply."""
    found = loose.find(start)
    if found is None or event.call is None:
        return None
    root, gitdir, commondir = found
    if event.agent not in recording(gitdir):
        return None
    check_cwd(root, event)
    announce(root, gitdir, commondir, event, options)
    return Recorded()


def announce(root: Path, gitdir: Path, commondir: Path, event: Event, options: Options) -> None:
    """The before hook: keep what the call's files hold now (a file tool), or just the moment it
    starts (a shell command: the announcement's own mtime)."""
    call = event.call
    assert call is not None
    before: dict[str, list[Any]] = {}
    if call.paths is not None:
        files = Files(root)
        excluded = exclude.load(commondir)
        for given in call.paths:
            rel = relative(root, event.cwd, given)
            if rel is None or excluded.match(rel):
                continue
            if files.stat(rel) is None:
                before[rel] = [None, 0]
            elif privateindex.readable(root, gitdir, commondir, rel, tracked=False):
                try:
                    found = files.read(rel, limit=options.max_file_bytes)
                except (FileRefused, PathRefused, OSError):
                    continue
                if found is not None:
                    before[rel] = [loose.write(commondir / "objects", "blob", found[0]),
                                   found[1]]
    state.announce(gitdir, running(event, call, before))


def _folder(gitdir: Path) -> Path:
    return gitdir / "gitspace" / "inplace"


