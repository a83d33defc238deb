"""Where a hook event goes, decided once: a workspace gitspace owns, a person's own checkout
where recording is turned on, or nowhere.

Invariants:
- The checkout is asked who owns it at most once per event, cheapest test first: an agent's
  worktree or the tip a workspace verified last (``owner.known_owned``: no git process), then
  whether ``gitspace hooks install`` turned recording on in this checkout (a file under its git
  dir), and only then the full test (``owner.owns``: a first-parent walk, usually to the tip it
  verified last).
- A person's own checkout is recorded in place only where recording is turned on, or when they
  ran ``gitspace record`` themselves. Anywhere else the hook records nothing and says so once,
  plainly (``events.NothingRecorded``), or says nothing at all when installed for every project
  (``--quiet-outside``).
- The before hook of a call never opens a repository through GitPython and starts no git
  process for a file tool (``announce.py``).
"""

from __future__ import annotations

from pathlib import Path

from ..core import owner
from ..errors import GitspaceError, NotAWorkspace
from ..storage import bounds, loose, statefiles
from . import state
from .announce import announce
from .events import Event, NothingRecorded, Options, Recorded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..storage.gitrepo import GitRepo
    from .recorder import Recorder

OWNED, IN_PLACE = "owned", "in place"
RECORDING = "gitspace/inplace/recording"  # below a checkout's git dir: the harnesses recorded


def handle(event: Event, start: Path, options: Options, *, asked: bool = False) -> Recorded:
    """Record ``event`` where it belongs (``asked``: a person ran ``gitspace record``)."""
    if event.kind == "ignored":
        return Recorded()
    from .. import config

    found = None if config.git_layout_variables() else loose.find(start)
    if found is not None and event.kind == "before":  # the fast path: no repository opened
        kind = _cheap(event, *found)
        if kind is not None:
            announce(*found, event, options, in_place=kind == IN_PLACE)
            return Recorded()
    from ..storage.gitrepo import GitRepo

    try:
        repo = GitRepo(*found) if found is not None else GitRepo.open(start)
    except NotAWorkspace as e:
        if options.quiet_outside:
            return Recorded()
        raise NothingRecorded(f"{start} is not in a git repository, so gitspace records nothing "
                              "here.", hint=e.hint) from None
    try:
        kind = _cheap(event, repo.root, repo.gitdir, repo.commondir) or _full(event, repo, asked)
        if kind is None:
            if options.quiet_outside:
                return Recorded()
            from .inplace.place import nothing_recorded_here

            raise nothing_recorded_here(repo, event.agent)
        if event.kind == "before":
            if event.call is not None:
                announce(repo.root, repo.gitdir, repo.commondir, event, options,
                         in_place=kind == IN_PLACE)
            return Recorded()
        return record_in(kind, repo, event, options)
    finally:
        repo.close()


def record_in(kind: str, repo: GitRepo, event: Event, options: Options,
              act: Callable[[Recorder], Any] | None = None) -> Recorded:
    """Record ``event`` on the place ``kind`` names in ``repo``."""
    from .announce import check_cwd
    from .recorder import record

    check_cwd(repo.root, event)
    if kind == OWNED:
        from ..core.workspace import Workspace
        from .events import RecordingOnly
        from .naming import token
        from .owned import Owned

        ws = Workspace(repo, tools=RecordingOnly(), agent=event.agent,
                       session=token(event.session), max_file_bytes=options.max_file_bytes)
        return record(Owned(ws), event, options, act)
    from .inplace.place import InPlace

    return record(InPlace(repo, options), event, options, act)


def _cheap(event: Event, root: Path, gitdir: Path, commondir: Path) -> str | None:
    if owner.known_owned(root, gitdir, commondir):
        return OWNED
    if event.agent in recording(gitdir):
        return IN_PLACE
    return None


def _full(event: Event, repo: GitRepo, asked: bool) -> str | None:
    if owner.owns(repo):
        return OWNED
    return IN_PLACE if asked else None


def recording(gitdir: Path) -> list[str]:
    """The harnesses recorded in place in this checkout (``gitspace hooks install`` there)."""
    try:
        data = bounds.load_state(statefiles.read(gitdir, RECORDING) or b"[]")
    except (OSError, ValueError, RecursionError, statefiles.StateRefused):
        return []
    found = data.get("harnesses") if isinstance(data, dict) else None
    return [h for h in found if isinstance(h, str)] if isinstance(found, list) else []


def note_failure(start: Path, reason: str) -> None:
    """A hook call failed before it could record anything: have the next one catch up, where
    anything is recorded at all."""
    from ..storage.gitrepo import GitRepo

    try:
        repo = GitRepo.locate(start)
    except GitspaceError:
        return
    try:
        if recording(repo.gitdir) or owner.owns(repo):
            state.mark_missed(repo.gitdir, reason)
    finally:
        repo.close()
