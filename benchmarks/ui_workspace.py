"""A large, realistic workspace for the web view's benchmark, built through ``ws.call``.

Three agents take turns in one workspace, each in its own session, with tool-use ids: creates,
str_replaces and appends over a few hundred files, a checkpoint every 100 ops, a restore every
500, undo and redo now and then. Every op goes through ``Workspace.call``, the path agents take.

    python benchmarks/ui_workspace.py DIR [OPS]     # builds DIR (must not exist), prints timings
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import gitspace

AGENTS = ("planner", "coder", "reviewer")


def build(root: Path, ops: int, seed: int = 7) -> int:
    """Make ``root`` a workspace with about ``ops`` ops; returns the number made."""
    rnd = random.Random(seed)
    gitspace.init(root, agent="setup").close()
    spaces = [gitspace.open(root, agent=a, session=f"{a}-session-{seed}") for a in AGENTS]
    made, checkpoints, files = 0, [], [f"src/mod_{i:03d}.py" for i in range(300)]
    try:
        while made < ops:
            ws = spaces[made % len(spaces)]
            use = f"toolu_bench_{made:06d}"
            path = rnd.choice(files)
            roll = rnd.random()
            if made % 100 == 99:
                tool, args = "checkpoint", {"name": f"cp-{made:06d}", "message": "bench"}
            elif made % 500 == 499 and checkpoints:
                tool, args = "restore", {"name": rnd.choice(checkpoints[-5:])}
            elif roll < 0.02 and made:
                tool, args = "undo", {}
            elif roll < 0.03 and made:
                tool, args = "redo", {}
            elif not (root / path).exists():
                tool, args = "create", {"path": path, "file_text": _module(rnd, made)}
            elif roll < 0.6:
                tool, args = "append", {"path": path, "text": f"# op {made}\nvalue_{made} = {made}\n"}
            else:
                tool, args = "create", {"path": path, "file_text": _module(rnd, made)}
            result = ws.call(tool, args, tool_use_id=use)
            if tool == "checkpoint" and result.ok:
                checkpoints.append(args["name"])
            made += 1
    finally:
        for ws in spaces:
            ws.close()
    return made


def _module(rnd: random.Random, n: int) -> str:
    body = [f'"""Module written by op {n}."""', "", "from __future__ import annotations", ""]
    for i in range(rnd.randint(5, 40)):
        body += [f"def fn_{n}_{i}(x: int) -> int:", f"    return x * {i} + {n}", ""]
    return "\n".join(body)


if __name__ == "__main__":
    target, count = Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    start = time.perf_counter()
    made = build(target, count)
    print(f"{made} ops in {time.perf_counter() - start:.1f} s at {target}")
