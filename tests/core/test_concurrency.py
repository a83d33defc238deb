"""Several processes writing to one branch of one workspace at once never lose a commit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

from conftest import assert_clean, git, ops

import gitspace
from gitspace.core.timeline import verify

WORKER = textwrap.dedent("""
    import sys
    import gitspace
    root, me, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ws = gitspace.open(root, agent=f"worker-{me}")
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    for n in range(count):
        for path, text in ((f"own/{me}.txt", f"{me}:{n}\\n"), ("shared.txt", f"{me}:{n}\\n")):
            r = ws.call("append", {"path": path, "text": text})
            if not r.ok:
                print("FAILED", r.text.replace("\\n", " "), flush=True)
                sys.exit(1)
            print(r.op, flush=True)
    ws.close()
""")

WORKERS, OPS = 4, 25


def test_four_processes_one_branch(ws_root: Path) -> None:
    gitspace.init(ws_root, agent="tester").close()
    children = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(ws_root), str(i), str(OPS)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        for i in range(WORKERS)
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    acknowledged: dict[int, list[str]] = {}
    for i, child in enumerate(children):
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, out + err
        acknowledged[i] = out.split()
        assert len(acknowledged[i]) == 2 * OPS

    recorded = ops(ws_root)
    counts = Counter(op.op_id for op in recorded)
    for i, ids in acknowledged.items():
        assert all(counts[op_id] == 1 for op_id in ids), f"worker {i} lost or duplicated an op"
    assert len(recorded) == 1 + WORKERS * OPS * 2
    # Every op ran as its worker's tool call; nothing was mistaken for an outside edit.
    assert Counter(op.agent for op in recorded[1:]) == {
        f"worker-{i}": 2 * OPS for i in range(WORKERS)}
    assert {op.source for op in recorded[1:]} == {"tool"}
    assert git(ws_root, "rev-list", "--count", "HEAD").strip() == str(len(recorded))

    shared = (ws_root / "shared.txt").read_text().splitlines()
    assert sorted(shared) == sorted(f"{i}:{n}" for i in range(WORKERS) for n in range(OPS))
    for i in range(WORKERS):
        mine = [line for line in shared if line.startswith(f"{i}:")]
        assert mine == [f"{i}:{n}" for n in range(OPS)], "a worker's appends are out of order"
        own = (ws_root / "own" / f"{i}.txt").read_text()
        assert own == "".join(f"{i}:{n}\n" for n in range(OPS))
    assert_clean(ws_root)
    with gitspace.open(ws_root) as ws:
        assert verify(ws).ok
