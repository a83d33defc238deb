"""``sync --watch``: keep a long-running agent's branch synced, online or not.

Invariants:
- It syncs after every op (it sees the branch ref move; it polls the ref, which costs one small
  read, and never scans the work tree) and every ``every`` seconds (to bring other clones' ops).
- Offline is a normal state, not a failure: when the remote cannot be reached, or keeps winning
  races, the ops stay queued on the local branch (they are commits, so nothing is held in
  memory) and the next attempt comes after a pause that grows up to ``every``; when the server is
  back they go out with the first sync that reaches it.
- A refusal that needs a decision (an op that no longer applies, a rewritten remote, a
  checkpoint clash) ends the watch with that error: retrying could not change it.
- It stops when ``stop`` is set, between syncs: a sync is never cut short by it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core.workspace import Workspace
from . import sync_state
from .remote import RemoteUnavailable
from .sync import SyncBusy, Synced, sync

POLL = 0.05  # seconds between looks at the branch ref
FIRST_RETRY = 0.2  # seconds before the first retry when offline; doubles up to ``every``


@dataclass
class Event:
    """One thing the watch reports: a sync that changed something, or a retry to come."""

    kind: str  # "synced" | "offline"
    text: str
    synced: Synced | None = None
    queued: int = 0  # ops waiting here for the remote


def watch(ws: Workspace, remote: str, *, every: float, stop: threading.Event,
          on_event: Callable[[Event], None]) -> None:
    """Sync ``ws``'s branch with ``remote`` until ``stop`` is set (see the module docstring)."""
    last: str | None = None  # the branch tip the last sync attempt started from
    due = 0.0
    retry = FIRST_RETRY
    offline = False
    while not stop.is_set():
        branch = ws.branch()
        tip = ws.repo.read_ref(f"refs/heads/{branch}")
        now = time.monotonic()
        if (tip != last and not offline) or now >= due:
            last = tip
            try:
                done = sync(ws, remote)
            except (RemoteUnavailable, SyncBusy) as e:
                queued = queued_ops(ws, remote, branch)
                on_event(Event("offline", f"{e.message} {queued} op(s) queued here; next try in "
                                          f"{retry:.1f} s.", queued=queued))
                offline, due = True, now + retry
                retry = min(every, retry * 2)
            else:
                offline, retry = False, FIRST_RETRY
                last, due = done.tip, now + every
                if done.changed:
                    on_event(Event("synced", "", done))
        stop.wait(POLL)


def queued_ops(ws: Workspace, remote: str, branch: str) -> int:
    """Commits on the branch that the remote did not have at the last sync."""
    seen = ws.repo.read_ref(sync_state.tracking_ref(remote, branch))
    rev = f"refs/heads/{branch}" if seen is None else f"{seen}..refs/heads/{branch}"
    return int(ws.repo.git("rev-list", "--count", rev).decode().strip() or 0)
