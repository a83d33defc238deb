"""What a sync keeps between its steps, so that one killed at any instant is finished or
harmlessly repeated by the next.

Invariants:
- One sync at a time per checkout: ``lock`` is an ``flock`` on ``.git/gitspace/sync-lock``; the
  kernel drops it when the process dies, so a killed sync never blocks the next one.
- A sync's local move (its branch with files and index, then its checkpoint tags and the
  remote-tracking ref) is written to ``sync-journal.json`` before anything moves. The branch
  moves through the op transaction, whose own journal rolls it forward after a crash; the other
  refs move after it, each by compare-and-swap. ``finish`` completes the refs of a journal whose
  branch move happened and drops one whose move never happened, so a checkpoint never points at
  a commit the branch has left, and nothing moves twice. The remote-tracking ref's move after a
  push is journaled the same way (a move of refs only).
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
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..core.transaction import COMMITTER, break_stale_locks, private_folder
from ..core.workspace import Workspace
from ..errors import GitspaceError, LockTimeout
from ..storage import lockfile
from .sync_pace import Pace

JOURNAL = "sync-journal.json"
PACE = "sync-pace.json"
SCRATCH = "sync-scratch"
LOCK = "sync-lock"  # an flock, never removed: not named *.lock, which means a stale git lock


@dataclass
class Move:
    """Where a sync moves this checkout: ``branch`` from ``old`` to ``new`` (files and index
    with it), then every ``(ref, old, new)`` of ``refs`` (old None: the ref is created)."""

    branch: str
    old: str
    new: str
    refs: list[tuple[str, str | None, str]] = field(default_factory=list)


def tracking_ref(remote: str, branch: str) -> str:
    return f"refs/remotes/{remote}/{branch}"


@contextmanager
def lock(ws: Workspace, timeout: float = 120.0) -> Iterator[None]:
    """Hold this checkout's sync lock (waiting up to ``timeout`` seconds for another sync)."""
    busy = LockTimeout(f"Another sync of {ws.root} ran for more than {timeout:.0f} s.",
                       hint="Wait for it to finish ('gitspace sync --watch' holds it while it "
                            "syncs), then sync again.")
    with lockfile.flocked(ws.transactions.state_dir / LOCK, timeout, busy, poll=0.01):
        yield


def begin(ws: Workspace, move: Move) -> None:
    """Announce ``move`` (written by rename: a torn journal never exists)."""
    path = ws.transactions.state_dir / JOURNAL
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"branch": move.branch, "old": move.old, "new": move.new,
                               "refs": move.refs}))
    os.replace(tmp, path)


def finish(ws: Workspace) -> list[str]:
    """Complete or drop an announced move; the refs it left alone, and why (normally none).

    Call with the workspace's transaction lock held and its own journal recovered, so the branch
    is where the op transaction left it. A ref's lock file left by a sync killed while moving it
    (taken after the journal was written, still there after a moment) is broken first: this
    process holds the sync lock, so no other sync is moving it."""
    path = ws.transactions.state_dir / JOURNAL
    try:
        record = json.loads(path.read_text())
        since = path.stat().st_mtime_ns
    except FileNotFoundError:
        return []
    except ValueError:
        path.unlink()
        return []
    repo = ws.repo
    tip = repo.read_ref(f"refs/heads/{record['branch']}")
    notes = []
    reached = tip is not None and (tip == record["new"] or (
        tip != record["old"] and repo.has_object(record["new"])
        and repo.is_ancestor(record["new"], tip)))
    if reached:
        for ref, old, new in record["refs"]:
            lock = repo.commondir / f"{ref}.lock"
            break_stale_locks([lock], since, repo)
            current = repo.read_ref(ref)
            if current == new:
                continue
            try:
                repo.cas_ref(ref, old, new, COMMITTER, "gitspace: sync")
            except GitspaceError:
                notes.append(f"{ref} was moved by someone else meanwhile, so sync left it at "
                             f"{(current or 'nothing')[:12]}")
    path.unlink()
    return notes


def move(ws: Workspace, what: Move) -> list[str]:
    """Announce and make a move that has no files (``what.old == what.new``: refs only)."""
    assert what.old == what.new
    with ws.transactions.lock():
        begin(ws, what)
        return finish(ws)


def scratch_folder(ws: Workspace) -> Path:
    """Where sync's rebases make their scratch repositories; emptied by ``clear_scratch``."""
    return private_folder(ws.transactions.state_dir, SCRATCH)


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
    path = ws.transactions.state_dir / PACE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(paces))
    os.replace(tmp, path)


def _paces(ws: Workspace) -> dict[str, object]:
    try:
        found = json.loads((ws.transactions.state_dir / PACE).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
