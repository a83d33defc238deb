"""Seed 001's recovery test: kill a run right after an op commits but before the conversation is
saved, resume it, and the op is applied exactly once (its result read back from the ledger).

The run is a real child process killed with SIGKILL from inside the loop's tool event, which
fires after the op's commit and before the session file is written again.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import SAMPLE, assert_clean, files, git, ops
from fake_anthropic import FakeAnthropic, text, tool_use

import gitspace
from gitspace.agent import session as sessions
from gitspace.agent.clients import AnthropicClient
from gitspace.agent.loop import Loop
from gitspace.agent.policies.maze import MazePolicy
from gitspace.agent.session import TOOLS, Session

CHILD = """
import os, signal, sys, json
import gitspace
from gitspace.agent.loop import Loop, LoopOptions
root, kind, arg, kill_after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if kind == "api":
    import anthropic
    from gitspace.agent.clients import AnthropicClient
    client = AnthropicClient(model="fake-model", sdk_client=anthropic.Anthropic(
        api_key="test-key", base_url=arg, max_retries=0))
else:
    from gitspace.agent.policies import make
    client = make(arg)
seen = []
def on_event(event):  # kill_after > 0 counts ops; < 0 counts any tool result
    if event.kind == "tool" and (event.result.op or kill_after < 0):
        seen.append(event.result.op)
        if len(seen) == abs(kill_after):
            os.kill(os.getpid(), signal.SIGKILL)
with gitspace.open(root, agent="runner") as ws:
    Loop(ws, client, LoopOptions(max_steps=100), on_event).start(sys.argv[5])
"""


def run_child(root: Path, kind: str, arg: str, kill_after: int,
              task: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, str(root), kind, arg, str(kill_after), task],
                          capture_output=True, text=True, timeout=120)


def only_session(root: Path) -> Session:
    [session_id] = sessions.ids(root)
    return Session.load(root, session_id)


def test_an_op_committed_before_the_crash_is_not_applied_again(ws_root: Path,
                                                               fake_api: FakeAnthropic) -> None:
    gitspace.init(ws_root, agent="runner").close()
    fake_api.reply(tool_use("toolu_1", "append", {"path": "log.md", "text": "paid invoice 42\n"}),
                   stop_reason="tool_use")
    child = run_child(ws_root, "api", fake_api.base_url, 1, "Pay invoice 42 once.")
    assert child.returncode == -signal.SIGKILL, child.stderr

    saved = only_session(ws_root)
    assert saved.next == TOOLS and list(saved.pending) == ["toolu_1"]
    [applied] = [op for op in ops(ws_root) if op.tool == "append"]
    assert applied.op_id == saved.pending["toolu_1"]  # recorded before it ran, committed, not saved

    def answered_from_ledger(body: dict[str, Any]) -> None:
        [result] = body["messages"][-1]["content"]
        assert result["tool_use_id"] == "toolu_1" and not result.get("is_error")
        assert "Recovered after a restart" in result["content"] and applied.op_id in result["content"]
        assert result["content"].startswith("Appended 16 characters to log.md.")

    fake_api.reply(text("Paid once."), check=answered_from_ledger)
    with gitspace.open(ws_root, agent="runner") as ws:
        client = AnthropicClient(model="fake-model", sdk_client=fake_api.client())
        outcome = Loop(ws, client).resume(saved.id)
    fake_api.done()

    assert outcome.ok and outcome.session.stats.recovered == 1
    assert files(ws_root)["log.md"] == "paid invoice 42\n"
    assert [op.op_id for op in ops(ws_root) if op.tool == "append"] == [applied.op_id]
    assert_clean(ws_root)
    git(ws_root, "fsck", "--no-progress")


def test_a_killed_maze_run_resumes_to_the_same_totals(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(SAMPLE, root)
    gitspace.init(root, agent="runner").close()
    child = run_child(root, "policy", "maze", 5, "Escape the maze.")
    assert child.returncode == -signal.SIGKILL, child.stderr
    saved = only_session(root)
    assert saved.next == TOOLS and saved.pending

    with gitspace.open(root, agent="runner") as ws:
        outcome = Loop(ws, MazePolicy()).resume(saved.id)
    assert outcome.ok, outcome.text
    assert outcome.session.stats.recovered >= 1
    moves = [op for op in ops(root) if op.tool == "move"]
    assert len(moves) == 20 and len({op.op_id for op in moves}) == 20
    assert len(git(root, "tag", "-l", "gitspace/*").split()) == 6
    assert json.loads(files(root)["maze/position.json"])["moves"] == 12
    assert_clean(root)


def test_a_branch_created_before_the_crash_is_recovered_not_refused(ws_root: Path,
                                                                  fake_api: FakeAnthropic) -> None:
    """branch has no op commit: its reflog's first entry carries the op id instead."""
    gitspace.init(ws_root, agent="runner").close()
    fake_api.reply(tool_use("toolu_1", "branch", {"name": "try-east"}), stop_reason="tool_use")
    child = run_child(ws_root, "api", fake_api.base_url, -1, "Try east.")
    assert child.returncode == -signal.SIGKILL, child.stderr
    saved = only_session(ws_root)
    assert saved.next == TOOLS and list(saved.pending) == ["toolu_1"]
    git(ws_root, "switch", "-q", "main")  # as if the crash came between creating and switching

    def recovered(body: dict[str, Any]) -> None:
        [result] = body["messages"][-1]["content"]
        assert not result.get("is_error") and "recovered after a restart" in result["content"]

    fake_api.reply(text("On try-east."), check=recovered)
    with gitspace.open(ws_root, agent="runner") as ws:
        client = AnthropicClient(model="fake-model", sdk_client=fake_api.client())
        outcome = Loop(ws, client).resume(saved.id)
        assert ws.repo.head_branch() == "try-east"
    fake_api.done()
    assert outcome.ok and outcome.session.stats.recovered == 1

