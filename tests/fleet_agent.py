"""One member of a test fleet, run as its own process: COUNT ops on a clone, a sync after each.

    python fleet_agent.py CLONE AGENT INDEX COUNT GO_FILE [THINK]

It waits for GO_FILE to exist (so every member starts at once), then, THINK seconds apart
(default 0: as fast as it can, the worst case for races; an agent waiting for its model is
seconds apart), for each op prints one JSON
line: {"op": id, "sync": "ok" | "offline" | "busy", "attempts": n, "made": t, "done": t} where
``made`` is the wall-clock time the op was committed here and ``done`` the time its sync
returned (benchmarks/sync.py reads those two). A sync that cannot reach the
server or keeps losing races is not a failure: the op stays queued and the next sync takes it.
Any other error ends the process with a traceback (the test fails on a non-zero exit).

The ops touch shared files on purpose: every member appends to ``shared/log.md`` and edits its
own line of ``shared/board.md``. A rebase by text conflicts on both (same end of file, adjacent
lines); a rebase by meaning re-runs them.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import gitspace
from gitspace.team.remote import RemoteUnavailable
from gitspace.team.sync import SyncBusy, sync

BOARD = "".join(f"slot-{i}: v0\n" for i in range(8))


def op_for(index: int, k: int) -> tuple[str, dict[str, Any]]:
    if k % 3 == 0:
        return "create", {"path": f"clones/c{index}/n{k}.md", "file_text": f"note {k} of {index}\n"}
    if k % 3 == 1:
        return "append", {"path": "shared/log.md", "text": f"clone {index} op {k}\n"}
    previous = k - 3 if k > 2 else 0
    return "str_replace", {"path": "shared/board.md", "old_str": f"slot-{index}: v{previous}\n",
                           "new_str": f"slot-{index}: v{k}\n"}


def main(root: str, agent: str, index: str, count: str, go: str, think: str = "0") -> None:
    ws = gitspace.open(root, agent=agent)
    while not Path(go).exists():
        time.sleep(0.005)
    for k in range(int(count)):
        time.sleep(float(think))
        tool, args = op_for(int(index), k)
        result = ws.call(tool, args)
        if not result.ok:
            raise SystemExit(f"{tool} {args} failed: {result.text}")
        line: dict[str, Any] = {"op": result.op, "made": time.time()}
        try:
            line.update(sync="ok", attempts=sync(ws).attempts)
        except RemoteUnavailable as e:
            line.update(sync="offline", why=e.message)
        except SyncBusy:
            line.update(sync="busy")
        line["done"] = time.time()
        print(json.dumps(line), flush=True)
    ws.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
