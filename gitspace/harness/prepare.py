"""The before hook: announce a tool call and keep what its files hold, fast and without a commit.

Invariants:
- No lock, no commit, no git process for a file tool: its files' current contents are stored as
  loose blobs and named in ``state`` (a shell command also asks ``git status`` which files are
  dirty, and keeps those). ``record`` uses them at the after hook: what differs from the branch
  is an outside edit, committed as its own op before the call's.
- A shell command that starts while another runs keeps nothing: the other one's half-done
  changes are not outside edits (overlapping commands share what they change; see ``record``).
- Imports stay light (standard library, ``loose``, ``worktree``, ``owner``, ``paths``, ``state``):
  this runs before every file-changing tool call.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..core import exclude, owner, paths
from ..errors import FileRefused, PathRefused
from ..storage import loose
from ..storage.files import Files
from . import state
from .events import Call, Event, Options, PayloadRefused, Recorded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def handle(event: Event, start: Path, options: Options) -> Recorded | None:
    """Announce ``event`` (a ``before``) when the checkout is plainly a workspace; None when
    that cannot be told this cheaply (the caller then takes the full path)."""
    found = loose.find(start)
    if found is None or event.call is None:
        return None
    root, gitdir, commondir = found
    if not owner.known_owned(root, gitdir, commondir):
        return None
    check_cwd(root, event)
    announce(root, gitdir, commondir, event, options)
    return Recorded()


def check_cwd(root: Path, event: Event) -> None:
    if event.cwd is None:
        return
    top, cwd = root.resolve(), Path(event.cwd).resolve()
    if cwd != top and top not in cwd.parents:
        raise PayloadRefused(
            f"The hook payload is for {event.cwd}, which is not inside the workspace {root} "
            "the hook runs for, so nothing was recorded.",
            hint="Run the harness in the workspace its hooks were installed for.")


def relative(root: Path, cwd: str | None, path: str) -> str | None:
    """``path`` (as a harness gives it) relative to the work tree, or None when it is outside
    it or is a path gitspace refuses (``.git``, control characters...)."""
    given = Path(path)
    if not given.is_absolute():
        given = Path(cwd or root) / given
    try:
        full = given.parent.resolve() / given.name
        rel = paths.normalize(full.relative_to(root.resolve()).as_posix())
    except (ValueError, OSError, PathRefused):
        return None
    return None if paths.history_refusal(rel) else rel  # (.gitspace/ is gitspace's: never recorded)


def running(event: Event, call: Call, before: dict[str, list[Any]] | None = None) -> state.Running:
    key = state.call_key(event.agent, event.session, call.use_id, call.tool, call.args)
    return state.Running(key=key, agent=event.agent, session=event.session, tool=call.tool,
                         use_id=call.use_id, shell=call.paths is None, before=before or {},
                         started=time.time())


def announce(root: Path, gitdir: Path, commondir: Path, event: Event, options: Options) -> None:
    call = event.call
    assert call is not None
    if call.paths is not None:
        rels = [rel for p in call.paths if (rel := relative(root, event.cwd, p)) is not None]
    elif any(r.shell for r in state.running(gitdir)):
        rels = []
    else:
        from ..storage.gitrepo import GitRepo

        rels = GitRepo(root, gitdir, commondir).status_paths()
    excluded = exclude.load(commondir)  # (never read, hashed or kept: gitspace exclude)
    rels = [rel for rel in rels if not excluded.match(rel.rstrip("/"))]
    before: dict[str, list[Any]] = {}
    files = Files(root)
    for rel in rels:
        try:
            found = files.read(rel, limit=options.max_file_bytes)
        except (FileRefused, OSError):
            continue  # too large or unreadable: its whole change will be the call's
        if found is None:
            before[rel] = [None, 0]
        else:
            data, mode = found
            before[rel] = [loose.write(commondir / "objects", "blob", data), mode]
    state.announce(gitdir, running(event, call, before))
