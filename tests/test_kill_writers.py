"""kill -9 at random moments of the writer's other paths: snapshot, switch and a harness's
record (tool ops: tests/core/test_crash.py; sync: tests/team/test_fleet_crash.py).

A child process loops over outside edits committed by ``snapshot``, a harness's Write calls
recorded through ``harness.route`` (the hook's own code, in process), and switches between two
branches whose files differ, printing each op id once it is acknowledged; it is killed (SIGKILL)
after a random moment. Then the workspace opens (finishing whatever change the kill cut short)
with ``git fsck --strict`` clean, HEAD on a branch, the index exactly HEAD's tree, no journal, lock
or temporary file left, and every acknowledged op on one of the branches.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import call_ok, git, git_run, lock_files, work_tree_files

import gitspace
from gitspace.storage import ledger

ROUNDS = 24
LOOP = textwrap.dedent("""
    import random, sys
    from pathlib import Path
    import gitspace
    from gitspace.harness import route
    from gitspace.harness.events import Call, Event, Options
    root, seed = Path(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(seed)
    ws = gitspace.open(root, agent="killed")
    ws.call("view", {"path": ".gitignore"})
    print("ready", flush=True)
    for n in range(10**6):
        kind = rng.choice(["snapshot", "snapshot", "record", "record", "switch"])
        if kind == "snapshot":
            (root / f"out{n % 4}.txt").write_text(f"{seed}-{n}\\n" * rng.randrange(1, 40))
            r = ws.snapshot()
            acked = [r.op] if r.ok and r.op else []
        elif kind == "record":
            path = root / f"w/{n % 3}.txt"
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"written by the harness {seed}-{n}\\n")
            call = Call("Write", {"file_path": str(path), "content": "..."}, (str(path),),
                        f"toolu_{seed}_{n}")
            done = route.handle(Event("after", "claude-code", cwd=str(root), session="s1",
                                       call=call), root, Options())
            acked = done.ops
        else:
            other = "side" if ws.repo.head_branch() == "main" else "main"
            r = ws.call("switch", {"name": other})
            if not r.ok and r.error is None:
                print("BUG", r.text, flush=True)
            acked = []
        for op in acked:
            print(op, flush=True)
""")


def _acknowledged(output: str) -> list[str]:
    lines = output.split("\n")[:-1]  # the part after the last newline was never acknowledged
    assert not [ln for ln in lines if ln.startswith("BUG")], output
    return [ln for ln in lines if ln and ln != "ready"]


def _check(root: Path, acknowledged: list[str]) -> None:
    with gitspace.open(root, agent="checker") as ws:
        assert ws.repo.head_branch() in ("main", "side")
    fsck = git_run(root, "fsck", "--strict", "--no-progress")
    assert fsck.returncode == 0, fsck.stdout.decode() + fsck.stderr.decode()
    assert git(root, "diff-index", "--cached", "HEAD") == "", "the index is not HEAD's tree"
    assert not lock_files(root) and not (root / ".git" / "gitspace" / "journal.json").exists()
    assert not [p for p in work_tree_files(root) if p.name.startswith(".gitspace-")]
    recorded = set()
    for message in git(root, "log", "--branches", "-z", "--format=%B").split("\0"):
        op = ledger.parse_message(message) if message.strip() else None
        if op is not None:
            recorded.add(op.op_id)
    missing = set(acknowledged) - recorded
    assert not missing, f"acknowledged ops lost: {sorted(missing)}"


def test_kill_9_during_snapshot_record_and_switch(ws_root: Path) -> None:
    with gitspace.init(ws_root, agent="killed") as ws:
        call_ok(ws, "create", {"path": "shared.txt", "file_text": "on main\n"})
        call_ok(ws, "branch", {"name": "side", "switch": True})
        call_ok(ws, "create", {"path": "shared.txt", "file_text": "on side\n" * 50})
        call_ok(ws, "create", {"path": "only-side/x.txt", "file_text": "x\n"})
        call_ok(ws, "switch", {"name": "main"})
    rng = random.Random(20261201)
    acknowledged: list[str] = []
    killed_midway = 0
    for round_ in range(ROUNDS):
        child = subprocess.Popen([sys.executable, "-c", LOOP, str(ws_root), str(round_)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n", child.stderr.read() if child.stderr else ""
        time.sleep(rng.uniform(0.01, 0.3))
        killed_midway += child.poll() is None
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate()
        assert child.returncode == -signal.SIGKILL, err
        acknowledged += _acknowledged(out)
        _check(ws_root, acknowledged)
    assert killed_midway == ROUNDS
    assert len(acknowledged) > ROUNDS // 2, "the children hardly recorded anything: it proves nothing"
