"""The CLI end to end, as a user runs it: real processes, real repositories, exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def gs(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    return subprocess.run([sys.executable, "-m", "gitspace", "-C", str(cwd), *args],
                          capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def ws_dir(tmp_path: Path) -> Path:
    target = tmp_path / "ws"
    out = gs(tmp_path, "init", str(target))
    assert out.returncode == 0, out.stderr
    return target


def test_call_log_and_json_listings(ws_dir: Path) -> None:
    out = gs(ws_dir, "--agent", "cli-bot", "call", "create", "--args",
             '{"path": "notes/a.md", "file_text": "one\\n"}')
    assert out.returncode == 0, out.stderr
    assert "File created successfully at: notes/a.md" in out.stdout
    assert gs(ws_dir, "checkpoint", "first", "-m", "saved").returncode == 0
    log = json.loads(gs(ws_dir, "log", "--json").stdout)
    assert [e["op"]["tool"] for e in log] == ["create", "init"]
    assert log[0]["op"]["agent"] == "cli-bot"
    assert log[0]["files"] == ["notes/a.md"]
    assert log[0]["checkpoints"] == ["first"]
    cps = json.loads(gs(ws_dir, "checkpoints", "--json").stdout)
    assert [c["name"] for c in cps] == ["first"]
    branches = json.loads(gs(ws_dir, "branches", "--json").stdout)
    assert branches == [{"name": "main", "tip": log[0]["commit"], "current": True}]
    tools = json.loads(gs(ws_dir, "tools", "--json").stdout)["tools"]
    names = [t["name"] for t in tools]
    assert names == sorted(names) and {"view", "create", "undo", "peek"} <= set(names)
    shown = gs(ws_dir, "show", log[0]["op"]["id"])
    assert shown.returncode == 0 and "+one" in shown.stdout


def test_expected_errors_exit_1_with_a_hint(ws_dir: Path) -> None:
    out = gs(ws_dir, "call", "str_replace", "--args",
             '{"path": "missing.md", "old_str": "a", "new_str": "b"}')
    assert out.returncode == 1
    assert "missing.md does not exist" in out.stderr and "hint:" in out.stderr
    bad_json = gs(ws_dir, "call", "create", "--args", "{nope")
    assert bad_json.returncode == 2 and "not valid JSON" in bad_json.stderr  # a usage error
    unknown = gs(ws_dir, "call", "no_such_tool")
    assert unknown.returncode == 1 and "gitspace tools" in unknown.stderr
    nowhere = gs(ws_dir / "does-not-exist", "log")
    assert nowhere.returncode == 1 and "does not exist" in nowhere.stderr
    assert "Traceback" not in out.stderr + bad_json.stderr + unknown.stderr + nowhere.stderr


def test_usage_error_exits_2(ws_dir: Path) -> None:
    out = gs(ws_dir, "log", "-n", "not-a-number")
    assert out.returncode == 2


def test_direct_verbs_undo_redo_restore_branch_switch(ws_dir: Path) -> None:
    def call(tool: str, args: dict[str, object]) -> None:
        out = gs(ws_dir, "call", tool, "--args", json.dumps(args))
        assert out.returncode == 0, out.stderr

    call("create", {"path": "f.txt", "file_text": "v1\n"})
    assert gs(ws_dir, "checkpoint", "v1").returncode == 0
    call("create", {"path": "f.txt", "file_text": "v2\n"})
    assert gs(ws_dir, "undo").returncode == 0
    assert (ws_dir / "f.txt").read_text() == "v1\n"
    assert gs(ws_dir, "redo").returncode == 0
    assert (ws_dir / "f.txt").read_text() == "v2\n"
    assert gs(ws_dir, "restore", "v1").returncode == 0
    assert (ws_dir / "f.txt").read_text() == "v1\n"
    assert gs(ws_dir, "branch", "alt", "--from", "v1", "--switch").returncode == 0
    call("create", {"path": "f.txt", "file_text": "alt\n"})
    assert gs(ws_dir, "switch", "main").returncode == 0
    assert (ws_dir / "f.txt").read_text() == "v1\n"
    verify = json.loads(gs(ws_dir, "verify", "--json").stdout)
    assert verify["ok"] and verify["problems"] == []
    status = subprocess.run(["git", "status", "--porcelain"], cwd=ws_dir, capture_output=True,
                            text=True).stdout
    assert status == ""


def test_snapshot_and_status(ws_dir: Path) -> None:
    (ws_dir / "outside.txt").write_text("edited by a human\n")
    status = json.loads(gs(ws_dir, "status", "--json").stdout)
    assert status["pending"] == ["outside.txt"]
    out = gs(ws_dir, "snapshot", "--author", "alice")
    assert out.returncode == 0 and "1 file" in out.stdout
    log = json.loads(gs(ws_dir, "log", "-n", "1", "--json").stdout)
    assert log[0]["op"]["source"] == "external" and log[0]["author"] == "alice"
    assert json.loads(gs(ws_dir, "status", "--json").stdout)["pending"] == []


def test_verify_reports_a_malformed_op(ws_dir: Path) -> None:
    (ws_dir / "x.txt").write_text("x\n")
    subprocess.run(["git", "add", "x.txt"], cwd=ws_dir, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m",
                    "forged\n\nGitspace-Format: 1\nGitspace-Op: nope"], cwd=ws_dir, check=True)
    out = gs(ws_dir, "verify")
    assert out.returncode == 1 and "malformed" in out.stdout.lower()


def test_ctrl_c_exits_130(ws_dir: Path) -> None:
    script = ("import time, gitspace.cli as c\n"
              "def sleepy() -> None:\n    time.sleep(30)\n"
              "c.COMMANDS.append(('sleepy', sleepy))\n"
              "import sys; sys.argv=['gitspace','sleepy']; c.main()\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) == 130


def test_bug_exits_3_without_locals(tmp_path: Path) -> None:
    script = ("import gitspace.cli as c\n"
              "def boom() -> None:\n    secret = 'sk-ant-SECRET'\n    raise RuntimeError('kaput')\n"
              "c.COMMANDS.append(('boom', boom))\n"
              "import sys; sys.argv=['gitspace','boom']; c.main()\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 3
    assert "bug" in out.stderr and "kaput" in out.stderr and "sk-ant-SECRET" not in out.stderr
