"""``gitspace sync`` from the command line: once, with --drop, and --watch through an outage."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from conftest import assert_clean, call_ok, state
from fleet import machine, ops_of, seed
from gitserver import GitServer


def gs(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    return subprocess.run([sys.executable, "-m", "gitspace", "-C", str(cwd), *args],
                          capture_output=True, text=True, env=env, timeout=120)


def wait_for(what: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_sync_once_and_its_refusals(tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    call_ok(a, "str_replace", {"path": "shared/board.md", "old_str": "slot-3: v0",
                               "new_str": "slot-3: a"})
    out = gs(a.root, "sync")
    assert out.returncode == 0, out.stderr
    assert "Synced main with origin" in out.stdout and "1 pushed" in out.stdout
    assert "already in sync" in gs(a.root, "sync").stdout
    loser = call_ok(b, "str_replace", {"path": "shared/board.md", "old_str": "slot-3: v0",
                                       "new_str": "slot-3: b"})
    kept = call_ok(b, "append", {"path": "shared/log.md", "text": "b\n"})
    before = state(b.root)
    out = gs(b.root, "sync")
    assert out.returncode == 1
    assert f"Your op {loser.op} (str_replace" in out.stderr and "Hint:" in out.stderr
    assert "Traceback" not in out.stderr and state(b.root) == before
    out = gs(b.root, "sync", "--drop", loser.op or "", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["dropped"] == [[loser.op, loser.commit]] and report["pushed"] == 1
    assert kept.op in [op.op_id for op in ops_of(git_server.path("fleet"))]
    for bad in (["nowhere"], ["--drop", "not-an-op"], ["--watch", "--drop", kept.op or ""]):
        out = gs(b.root, "sync", *bad)
        assert out.returncode in (1, 2) and "Traceback" not in out.stderr, out.stderr
    a.close()
    b.close()


def test_watch_syncs_every_op_and_queues_them_while_the_server_is_down(
        tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    watcher = subprocess.Popen(
        [sys.executable, "-m", "gitspace", "-C", str(b.root), "sync", "--watch", "--every", "0.5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        def remote_has(op: str | None) -> Callable[[], bool]:
            return lambda: op in [o.op_id for o in ops_of(git_server.path("fleet"))]

        first = call_ok(b, "append", {"path": "shared/log.md", "text": "b1\n"})
        wait_for(remote_has(first.op))  # after every op
        call_ok(a, "append", {"path": "shared/log.md", "text": "a1\n"})
        a_sync = gs(a.root, "sync")
        assert a_sync.returncode == 0, a_sync.stderr
        wait_for(lambda: "a1" in (b.root / "shared/log.md").read_text())  # every N seconds
        git_server.stop()
        queued = [call_ok(b, "append", {"path": "shared/log.md", "text": f"offline {n}\n"}).op
                  for n in range(3)]
        time.sleep(1.5)  # a few attempts meet the closed port
        git_server.start()
        for op in queued:
            wait_for(remote_has(op))
        time.sleep(0.3)
    finally:
        watcher.send_signal(signal.SIGTERM)
        out, err = watcher.communicate(timeout=30)
    assert watcher.returncode == 0, err
    assert "offline:" in err and "op(s) queued here" in err
    assert "Synced main with origin" in out
    on_remote = [o.op_id for o in ops_of(git_server.path("fleet"))]
    assert all(on_remote.count(op) == 1 for op in [first.op, *queued])
    assert_clean(b.root)
    a.close()
    b.close()
