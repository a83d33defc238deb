"""One member of a test fleet, run as its own process: an agent making COUNT ops on a clone,
with ``sync --watch``'s rounds (``gitspace.team.sync_watch.Watch``) run between them.

    python fleet_agent.py CLONE AGENT INDEX COUNT GO_FILE [THINK [AFTER]]

It waits for GO_FILE to exist (so every member starts at once). Then, for each op: THINK seconds
pass (default 0; an agent waiting for its model is seconds apart), during which the watch runs
every round that falls due (as ``sync --watch`` beside the agent would); the op is made through
``ws.call``; and then, with AFTER ``every-op`` (the default), one round runs at once (the worst
case for races: a sync after every op, even one that is not this clone's turn to push), or with
AFTER ``watch`` one runs if the watch says it is due (what ``sync --watch`` does: an op made while
the clone waits for its turn queues until the turn). After the last op it keeps running due rounds
until no op is queued (or DRAIN seconds pass). It prints one JSON line per op, {"op": id, "made":
t}, and one per round, {"round": kind, "began": t, "done": t, "pushes": n, "pushed": n, "attempts":
n} with the watch's kinds ("synced", "current", "waiting", "lost", "offline"): an op has reached
the server at the end of the first round after it that pushed (a round pushes every op made before
it). benchmarks/sync.py reads these lines. A round that cannot reach the server or loses its race
is not a failure: the ops stay queued. Any other error ends the process with a traceback (the test
fails on a non-zero exit).

The ops touch shared files on purpose: every member appends to ``shared/log.md`` and edits its
own line of ``shared/board.md``. A rebase by text conflicts on both (same end of file, adjacent
lines); a rebase by meaning re-runs them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gitspace
from gitspace.team.sync_watch import POLL, Watch

BOARD = "".join(f"slot-{i}: v0\n" for i in range(17))  # a line for each of up to 16 clones
EVERY = 5.0  # seconds between the watch's syncs that only bring other clones' ops
DRAIN = 120.0  # seconds after the last op that the member waits for its queue to go out


def op_for(index: int, k: int) -> tuple[str, dict[str, Any]]:
    if k % 3 == 0:
        return "create", {"path": f"clones/c{index}/n{k}.md", "file_text": f"note {k} of {index}\n"}
    if k % 3 == 1:
        return "append", {"path": "shared/log.md", "text": f"clone {index} op {k}\n"}
    previous = k - 3 if k > 2 else 0
    return "str_replace", {"path": "shared/board.md", "old_str": f"slot-{index}: v{previous}\n",
                           "new_str": f"slot-{index}: v{k}\n"}


def main(root: str, agent: str, index: str, count: str, go: str, think: str = "0",
         after: str = "every-op") -> None:
    if after not in ("every-op", "watch"):
        raise SystemExit(f"AFTER is 'every-op' or 'watch', not {after!r}")
    ws = gitspace.open(root, agent=agent)
    watch = Watch(ws, "origin", every=EVERY)
    while not Path(go).exists():
        time.sleep(0.005)
    for k in range(int(count)):
        rounds_until(watch, time.monotonic() + float(think), lambda: False)
        tool, args = op_for(int(index), k)
        result = ws.call(tool, args)
        if not result.ok:
            raise SystemExit(f"{tool} {args} failed: {result.text}")
        emit({"op": result.op, "made": time.time()})
        if after == "every-op" or watch.due():
            report(watch)
    rounds_until(watch, time.monotonic() + DRAIN, lambda: watch.queued(ws.branch()) == 0)
    ws.close()


def rounds_until(watch: Watch, deadline: float, done: Callable[[], bool]) -> None:
    """Run the watch's due rounds until ``done()`` or ``deadline``."""
    while not done() and time.monotonic() < deadline:
        if watch.due():
            report(watch)
        else:
            time.sleep(min(POLL, watch.idle_s(), max(0.0, deadline - time.monotonic())))


def report(watch: Watch) -> None:
    """Run one round of ``watch`` and print what it did."""
    began = time.time()
    event = watch.step()
    done = event.synced
    emit({"round": event.kind, "began": began, "done": time.time(), "pushes": event.pushes,
          "pushed": done.pushed if done else 0, "attempts": done.attempts if done else 0})


def emit(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
