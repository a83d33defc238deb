"""``sync --watch``: keep a long-running agent's branch synced, online or not.

Invariants:
- It syncs after every op (it sees the branch ref move; it polls the ref, which costs one small
  read, and never scans the work tree) and every ``every`` seconds (to bring other clones' ops).
- One sync round at a time (``Watch.step``): never a retry loop that holds up the ops made
  meanwhile. Ops made while a round runs, or while it is not this clone's turn to push
  (``sync_pace``), queue on the branch and go out together in the next push: a batch.
- Turns: a round that lost its race is tried again after a short jitter; one that found it is
  not this clone's turn (a read of the remote's refs, nothing fetched) looks again half a round
  later or at the turn, whichever is sooner, so it sees every other clone's landing.
- Offline is a normal state, not a failure: when the remote cannot be reached the ops stay
  queued on the local branch (they are commits, so nothing is held in memory) and the next
  attempt comes after a pause that grows up to ``every``; when the server is back they go out
  with the first sync that reaches it.
- A refusal that needs a decision (an op that no longer applies, a rewritten remote, a
  checkpoint clash, credentials the host refuses) ends the watch with that error: retrying
  could not change it (and retrying a wrong password can lock an account on a real host).
- It stops when ``stop`` is set, between rounds: a round is never cut short by it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .. import progress
from ..core.workspace import Workspace
from . import sync_state
from .remote import RemoteUnavailable
from .sync import SyncBusy, Synced, sync

POLL = 0.05  # seconds between looks at the branch ref
FIRST_RETRY = 0.2  # seconds before the first retry when offline; doubles up to ``every``
REPORTED = ("synced", "offline")  # what ``watch`` passes on, and any round that changed
# something here (a round that waits for its turn still brings the remote's ops)


@dataclass
class SyncEvent:
    """What one round did: "synced" (it changed something), "current" (nothing to do),
    "waiting" (not this clone's turn yet), "lost" (its push lost a race) or "offline"."""

    kind: str
    text: str
    synced: Synced | None = None
    queued: int = 0  # ops waiting here for the remote
    pushes: int = 0  # pushes this round sent


class Watch:
    """The watch's state between rounds: when the next one is due, and why."""

    def __init__(self, ws: Workspace, remote: str, every: float,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self.ws, self.remote, self.every, self.clock, self.wall = ws, remote, every, clock, wall
        self.last: str | None = None  # the branch tip the last round started from
        self.at = 0.0  # when the next round is due even if no op lands here
        self.retry = FIRST_RETRY
        self.offline = False
        self.turn_at = 0.0  # while waiting for its turn: when to look at the remote again

    def due(self) -> bool:
        """Whether a round should run now: an op landed here since the last round (unless
        offline or waiting for a turn), or the time it was given has come."""
        branch = self.ws.branch()
        tip = self.ws.repo.read_ref(f"refs/heads/{branch}")
        now = self.clock()
        return (tip != self.last and not self.offline and now >= self.turn_at) or now >= self.at

    def idle_s(self) -> float:
        """Seconds until a round falls due with no op landing here (for a loop's sleep)."""
        return max(0.0, self.at - self.clock())

    def step(self) -> SyncEvent:
        """One sync round now, whatever ``due`` says."""
        ws, now = self.ws, self.clock()
        branch = ws.branch()
        self.last = ws.repo.read_ref(f"refs/heads/{branch}")
        try:
            done = sync(ws, self.remote, attempts=1, wait=False, clock=self.wall)
        except SyncBusy as e:
            self._next(self.clock() + e.retry_in)
            return SyncEvent("lost", e.message, queued=self.queued(branch), pushes=e.pushes)
        except RemoteUnavailable as e:
            queued = self.queued(branch)
            self.offline, self.at = True, now + self.retry
            text = f"{e.message} {queued} op(s) queued here; next try in {self.retry:.1f} s."
            self.retry = min(self.every, self.retry * 2)
            return SyncEvent("offline", text, queued=queued)
        self.offline, self.retry = False, FIRST_RETRY
        if done.waiting:
            self._next(self.clock() + done.waiting)
            return SyncEvent("waiting", f"Not this clone's turn yet; it looks again in "
                                    f"{done.waiting:.2f} s.", done,
                         queued=self.queued(branch), pushes=done.pushes)
        self.last, self.at, self.turn_at = done.tip, now + self.every, 0.0
        return SyncEvent("synced" if done.changed else "current", "", done, pushes=done.pushes)

    def _next(self, when: float) -> None:
        self.turn_at = self.at = when

    def queued(self, branch: str) -> int:
        return queued_ops(self.ws, self.remote, branch)


def watch(ws: Workspace, remote: str, *, every: float, stop: threading.Event,
          on_event: Callable[[SyncEvent], None]) -> None:
    """Sync ``ws``'s branch with ``remote`` until ``stop`` is set (see the module docstring)."""
    state = Watch(ws, remote, every)
    rounds = 0
    while not stop.is_set():
        if state.due():
            event = state.step()
            rounds += 1
            progress.report(rounds, None, "sync rounds")
            if event.kind in REPORTED or (event.synced is not None and event.synced.changed):
                on_event(event)
        stop.wait(min(POLL, state.idle_s()))


def queued_ops(ws: Workspace, remote: str, branch: str) -> int:
    """Commits on the branch that the remote did not have at the last sync."""
    seen = ws.repo.read_ref(sync_state.tracking_ref(remote, branch))
    rev = f"refs/heads/{branch}" if seen is None else f"{seen}..refs/heads/{branch}"
    return int(ws.repo.git("rev-list", "--count", rev).decode().strip() or 0)
