"""`gitspace replay` as CI runs it: exit codes, JSON, and interruption leaving nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import call_ok, git, head

import gitspace

TICK = """#!/usr/bin/env python3
# ---gitspace---
# name: tick
# description: Add a line to ticks.txt, slowly (test only).
# example: {}
# mutates: true
# args: {"type": "object", "properties": {}, "additionalProperties": false}
# ---
import os, time
# Tell the test an op is running (the cache folder is outside the work tree).
open(os.path.join(os.environ["GITSPACE_CACHE_DIR"], "tick-running"), "w").close()
time.sleep(0.4)
with open("ticks.txt", "a") as f:
    f.write("tick\\n")
print("ticked")
"""


def gs(cwd: Path, *args: str, tmpdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_command(cwd, *args), capture_output=True, text=True, timeout=60,
                          env=_env(tmpdir))


def _command(cwd: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "gitspace", "-C", str(cwd), "replay", *args]


def _env(tmpdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    env["TMPDIR"] = str(tmpdir)
    return env


def repo_state(root: Path) -> tuple[str, ...]:
    return (git(root, "for-each-ref"), git(root, "symbolic-ref", "HEAD"),
            git(root, "status", "--porcelain", "--untracked-files=all"),
            git(root, "worktree", "list", "--porcelain"), Path(root, ".git/index").read_bytes().hex())


@pytest.fixture
def tmpdir_(tmp_path: Path) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace whose main branch holds a few ops and a lie on branch 'lie'."""
    target = tmp_path / "ws"
    with gitspace.init(target, agent="ci-bot") as ws:
        call_ok(ws, "create", {"path": "notes.md", "file_text": "one\ntwo\n"})
        call_ok(ws, "str_replace", {"path": "notes.md", "old_str": "two", "new_str": "2"})
        git(target, "switch", "-q", "-c", "lie")
        (target / "notes.md").write_text("one\n2\nthree\n")
        before, last = (git(target, "log", "-1", "--format=%(trailers:key=Gitspace-Op,valueonly)",
                            rev).strip() for rev in ("HEAD~1", "HEAD"))
        git(target, "commit", "-qam", "append three\n\n" + git(target, "log", "-1", "--format=%B")
            .split("\n\n", 1)[1].replace('"new_str":"2","old_str":"two"',
                                         '"new_str":"3","old_str":"2"')
            .replace(f"Gitspace-After: {before}", f"Gitspace-After: {last}"))  # (placed)
        git(target, "switch", "-q", "main")
    return target


def test_exit_codes_text_and_json(root: Path, tmpdir_: Path) -> None:
    ok = gs(root, tmpdir=tmpdir_)
    assert ok.returncode == 0, ok.stderr
    assert "match" in ok.stdout and "2 re-executed, 1 applied as recorded" in ok.stdout
    data = json.loads(gs(root, "--json", tmpdir=tmpdir_).stdout)
    assert data["ok"] and data["result"] == "match" and data["total"] == 3
    assert data["reexecuted"] == 2 and data["divergence"] is None

    bad = gs(root, "lie", tmpdir=tmpdir_)
    assert bad.returncode == 1
    lie_op = git(root, "log", "-1", "--format=%(trailers:key=Gitspace-Op,valueonly)", "lie").strip()
    assert "diverged" in bad.stdout and lie_op in bad.stdout and "str_replace" in bad.stdout
    assert "paths: notes.md" in bad.stdout and "+++ replayed/notes.md" in bad.stdout
    found = json.loads(gs(root, "lie", "--json", tmpdir=tmpdir_).stdout)
    assert not found["ok"] and found["result"] == "diverged" and found["checked"] == 3
    d = found["divergence"]
    assert d["op_id"] == lie_op and d["tool"] == "str_replace" and d["paths"] == ["notes.md"]
    assert d["args"] == {"new_str": "3", "old_str": "2", "path": "notes.md"}
    assert "-three" in d["diff"] and len(d["diff"]) <= 41
    assert os.listdir(tmpdir_) == []


def test_bad_usage_exits_2(root: Path, tmpdir_: Path) -> None:
    git(root, "update-ref", "refs/heads/orphan", git(root, "commit-tree", "main^{tree}",
                                                     input=b"no common history\n").strip())
    before = repo_state(root)
    tip = head(root, "main")
    for args, words in [
        (["no-such-branch"], "not a branch or revision"),
        (["main", "--from", "lie"], "already contains every commit"),
        (["--onto", "main"], "--onto and --branch go together"),
        (["lie", "--onto", "main", "--branch", "main"], "already exists"),
        (["lie", "--onto", "main", "--branch", "bad..name"], "not a valid branch name"),
        (["--from", "nope"], "not a branch or revision"),
        (["lie", "--onto", "orphan", "--branch", "x"], "Invalid value for --onto:"),
        (["--no-scripts", "--onto", "main", "--branch", "x"], "cannot leave scripts unrun"),
    ]:
        out = gs(root, *args, tmpdir=tmpdir_)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert words in " ".join(out.stderr.split()), (args, out.stderr)
    assert repo_state(root) == before and head(root, "main") == tip


def test_onto_creates_a_branch_or_stops_with_exit_1(root: Path, tmpdir_: Path) -> None:
    with gitspace.open(root, agent="ci-bot") as ws:
        call_ok(ws, "create", {"path": "later.md", "file_text": "on main\n"})
    first = git(root, "rev-list", "--reverse", "main").split()[1]
    moved = gs(root, "main", "--from", first, "--onto", "main", "--branch", "again",
               tmpdir=tmpdir_)
    assert moved.returncode == 1 and "stopped" in moved.stdout  # 'two' is no longer there
    assert "again" not in git(root, "branch", "--list")
    init = git(root, "rev-list", "--reverse", "main").split()[0]
    fresh = gs(root, "main", "--from", first, "--onto", init, "--branch", "later-only",
               "--json", tmpdir=tmpdir_)
    assert fresh.returncode == 1  # str_replace needs notes.md, which init lacks
    assert json.loads(fresh.stdout)["divergence"]["tool"] == "str_replace"
    created = gs(root, "main", "--from", head(root, "main~1"), "--onto", first,
                 "--branch", "later-only", tmpdir=tmpdir_)
    assert created.returncode == 0, created.stdout + created.stderr
    assert "created branch later-only" in created.stdout
    assert git(root, "show", "later-only:notes.md") == "one\ntwo\n"
    assert git(root, "show", "later-only:later.md") == "on main\n"
    again = gs(root, "later-only", "--from", first, tmpdir=tmpdir_)
    assert again.returncode == 0 and "match" in again.stdout, again.stdout  # replays clean
    assert os.listdir(tmpdir_) == []


def test_no_scripts_reports_script_ops_as_not_verified(tmp_path: Path, tmpdir_: Path) -> None:
    target = tmp_path / "scripted"
    with gitspace.init(target, agent="ci-bot") as ws:
        (target / "constraints").mkdir()
        (target / "constraints" / "tick.py").write_text(TICK.replace("time.sleep(0.4)", ""))
        assert ws.snapshot().ok
        call_ok(ws, "tick", {})
    # The only op is a script op, left unrun: nothing was re-executed, which fails unless asked.
    empty = gs(target, "--no-scripts", tmpdir=tmpdir_)
    assert empty.returncode == 1 and "nothing re-executed" in empty.stdout, empty.stdout
    out = gs(target, "--no-scripts", "--allow-empty", tmpdir=tmpdir_)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 script op(s) not verified (scripts disabled)" in out.stdout
    data = json.loads(gs(target, "--no-scripts", "--allow-empty", "--json", tmpdir=tmpdir_).stdout)
    assert data["ok"] and data["unverified"] == 1 and data["scripts"] is False
    assert "not verified" not in gs(target, tmpdir=tmpdir_).stdout


@pytest.mark.parametrize("signum,moment", [(signal.SIGINT, "mid-op"), (signal.SIGTERM, "mid-op"),
                                           (signal.SIGTERM, "at-start")])
def test_an_interrupted_replay_leaves_nothing_behind(tmp_path: Path, tmpdir_: Path,
                                                     signum: int, moment: str) -> None:
    target = tmp_path / "slow"
    with gitspace.init(target, agent="ci-bot") as ws:
        for i in range(20):
            call_ok(ws, "create", {"path": f"f{i}.md", "file_text": f"{i}\n"})
        (target / "constraints").mkdir()
        (target / "constraints" / "tick.py").write_text(TICK)
        assert ws.snapshot().ok
        call_ok(ws, "tick", {})
        call_ok(ws, "tick", {})
    before = repo_state(target)
    proc = subprocess.Popen(_command(target), env=_env(tmpdir_), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    pattern = "gitspace-replay-*/ws/.git/gitspace/cache/tick-running" if moment == "mid-op" \
        else "gitspace-replay-*"
    while not list(tmpdir_.glob(pattern)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "replay never got there"
        time.sleep(0.005)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert os.listdir(tmpdir_) == [], "the scratch folder was left behind"
    assert repo_state(target) == before
    assert len(git(target, "worktree", "list").splitlines()) == 1


