"""What a sync keeps between its steps, so that one killed at any instant is finished or
harmlessly repeated by the next.

Invariants:
- One sync at a time per checkout: ``lock`` is an ``flock`` on ``.git/gitspace/sync-lock``; the
  kernel drops it when the process dies, so a killed sync never blocks the next one.
- A sync's local move (its branch with files and index, its checkpoint tags and the
  remote-tracking ref) is one change of the checkout's writer (``sync._move``): the refs move
  together in one ref transaction, and the writer's journal rolls the whole move forward after a
  crash, so a checkpoint never points at a commit the branch has left, and nothing moves twice.
  The remote-tracking ref's move after a push is a change of that ref alone (``move_tracking``).
- A rebase's scratch repository lives in ``.git/gitspace/sync-scratch/``, not in the temp
  folder: a sync killed mid-rebase cannot remove it, and the next sync (holding the lock, so no
  rebase of this checkout is running) clears what it left.
- ``sync-pace.json`` holds each remote branch's ``sync_pace.Pace`` (whose turn it is to push),
  written by rename under the sync lock; a missing or malformed one starts afresh, which only
  makes the clone's next push an owed one.
- ``refs/remotes/REMOTE/BRANCH`` is the remote's tip as the last sync saw it (git's ordinary
  remote-tracking ref, so ``git log origin/main`` shows it). A remote whose branch no longer
  contains it has been rewritten, and sync refuses to build on it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.workspace import Workspace
from ..core.writer import COMMITTER, Change, RefMove
from ..errors import GitspaceError, LockTimeout
from ..storage import bounds, lockfile, statefiles
from .sync_pace import Pace

PACE = "sync-pace.json"
SCRATCH = "sync-scratch"
LOCK = "sync-lock"  # an flock, never removed: not named *.lock, which means a stale git lock


def tracking_ref(remote: str, branch: str) -> str:
    return f"refs/remotes/{remote}/{branch}"


@contextmanager
def lock(ws: Workspace, timeout: float = 120.0) -> Iterator[None]:
    """Hold this checkout's sync lock (waiting up to ``timeout`` seconds for another sync)."""
    busy = LockTimeout(f"Another sync of {ws.root} ran for more than {timeout:.0f} s.",
                       hint="Wait for it to finish ('gitspace sync --watch' holds it while it "
                            "syncs), then sync again.")
    with lockfile.flocked(ws.repo.gitdir, f"gitspace/{LOCK}", timeout, busy, poll=0.01):
        yield


def move_tracking(ws: Workspace, ref: str, new: str) -> list[str]:
    """Move the remote-tracking ``ref`` to ``new`` (a change of refs only); a note when someone
    else moved it meanwhile, which is then left where they put it."""
    with ws.writer.locked():
        current = ws.repo.read_ref(ref)
        if current == new:
            return []
        try:
            ws.writer.apply(Change("gitspace: sync", COMMITTER, [RefMove(ref, current, new)]))
        except GitspaceError:
            return [f"{ref} was moved by someone else meanwhile, so sync left it at "
                    f"{(ws.repo.read_ref(ref) or 'nothing')[:12]}"]
    return []


def scratch_folder(ws: Workspace) -> Path:
    """Where sync's rebases make their scratch repositories; emptied by ``clear_scratch``."""
    return statefiles.folder(ws.writer.state_dir, SCRATCH)


def clear_scratch(ws: Workspace) -> None:
    """Remove what a killed sync's rebase left (call with the sync lock held)."""
    for entry in scratch_folder(ws).iterdir():
        shutil.rmtree(entry, ignore_errors=True)


def load_pace(ws: Workspace, remote: str, branch: str) -> Pace:
    """This clone's turns on ``remote``'s ``branch`` as the last sync left them."""
    return Pace.from_json(_paces(ws).get(f"{remote}/{branch}"))


def save_pace(ws: Workspace, remote: str, branch: str, pace: Pace) -> None:
    """Keep ``pace`` for the next sync (call with the sync lock held)."""
    paces = _paces(ws)
    paces[f"{remote}/{branch}"] = pace.as_json()
    statefiles.write(ws.repo.gitdir, f"gitspace/{PACE}", json.dumps(paces).encode())


def _paces(ws: Workspace) -> dict[str, object]:
    try:
        raw = statefiles.read(ws.repo.gitdir, f"gitspace/{PACE}")
        found = bounds.load_state(raw, "the pace file") if raw is not None else {}
    except (OSError, ValueError, RecursionError, statefiles.StateRefused):
        return {}
    return found if isinstance(found, dict) else {}
