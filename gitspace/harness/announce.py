"""The before hook: announce a tool call and keep what its files hold, fast and without a commit.

Invariants:
- No lock, no commit. A file tool's files are read as they are now and kept as loose blobs,
  named in ``state`` (``Running.before``); at its after hook the recorder commits whatever of it
  differs from the place's tree as the person's own op, before the call's. A file the person
  alone owns is never read: in their own checkout an ignored one, or one a filter owns (Git LFS:
  one ``git ls-files`` asks, with the standard library only).
- A shell command keeps the moment it started (its announcement's mtime). In a workspace it also
  keeps what the files ``git status`` finds dirty hold (one status of an index gitspace keeps
  current), so a file the person changed before it ran is split exactly; a shell command that
  starts while another runs keeps nothing, since the other one's half-done changes are no
  outside edits (overlapping commands share what they change: ``recorder.py``).
- Imports stay light (standard library, ``loose``, ``files``, ``paths``, ``exclude``,
  ``state``): this runs before every file-changing tool call.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..core import exclude, paths
from ..errors import FileRefused, PathRefused
from ..storage import loose
from ..storage.files import Files
from . import state
from .events import Call, Event, Options, PayloadRefused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def announce(root: Path, gitdir: Path, commondir: Path, event: Event, options: Options, *,
             in_place: bool) -> None:
    """Keep what ``event``'s call (a ``before``) needs at its after hook (see the docstring)."""
    call = event.call
    assert call is not None
    check_cwd(root, event)
    excluded = exclude.load(commondir)  # (never read, hashed or kept: gitspace exclude)
    if call.paths is not None:
        rels = [rel for p in call.paths if (rel := relative(root, event.cwd, p)) is not None]
    elif in_place or any(r.shell for r in state.running(gitdir)):
        rels = []
    else:
        from ..storage.gitrepo import GitRepo

        rels = GitRepo(root, gitdir, commondir).status_paths()
    before: dict[str, list[Any]] = {}
    files = Files(root)
    for rel in rels:
        rel = rel.rstrip("/")
        if excluded.match(rel):
            continue
        if files.stat(rel) is None:
            before[rel] = [None, 0]
            continue
        if in_place:
            from ..storage import privateindex

            if not privateindex.readable(root, gitdir, commondir, rel, tracked=False):
                continue
        try:
            found = files.read(rel, limit=options.max_file_bytes)
        except (FileRefused, PathRefused, OSError):
            continue  # too large or unreadable: its whole change will be the call's
        before[rel] = [None, 0] if found is None else [
            loose.write(commondir / "objects", "blob", found[0]), found[1]]
    state.announce(gitdir, running(event, call, before))


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
                         started=time.time(), args=_kept(call.args))


def _kept(value: Any) -> Any:
    """A call's input as its announcement keeps it: each string longer than the ledger keeps
    whole is its hash and size (``ledger.omit``), as its op would record one that is no file's
    content. (The payload's depth and size were bounded when it was read: payload.py.)"""
    if isinstance(value, str):
        from ..storage import ledger

        return value if len(value) <= ledger.ARG_LIMIT else ledger.omit(value)
    if isinstance(value, dict):
        return {str(k): _kept(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_kept(v) for v in value]
    return value
