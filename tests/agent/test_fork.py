"""A fork from any op: ``gitspace run --fork OP "new instruction"`` as a user runs it (real
processes, the real SDK, the fake Messages API), checked against the exact conversation the
first model call after the fork sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_clean, git, ops
from fake_anthropic import FakeAnthropic, text, tool_use

from gitspace.agent import compaction
from gitspace.agent.fork import NOT_IN_FORK
from gitspace.agent.session import Session, listing

KEY = "sk-ant-test-secret-value"


def gs(cwd: Path, fake: FakeAnthropic, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    env.update(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=fake.base_url)
    return subprocess.run([sys.executable, "-m", "gitspace", "-C", str(cwd), *args],
                          capture_output=True, text=True, env=env, timeout=120)


def on_disk(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*")
            if p.is_file() and ".git" not in p.parts and ".gitspace" not in p.parts}


@pytest.fixture
def ran(tmp_path: Path, fake_api: FakeAnthropic) -> tuple[Path, Session]:
    """A finished run: create, then two calls in one turn (an edit and a second file)."""
    root = tmp_path / "ws"
    assert subprocess.run([sys.executable, "-m", "gitspace", "init", str(root)],
                          capture_output=True).returncode == 0
    fake_api.reply(text("First the list."),
                   tool_use("toolu_1", "create", {"path": "todo.md", "file_text": "- a\n"}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_2", "str_replace", {"path": "todo.md", "old_str": "- a",
                                                       "new_str": "- b"}),
                   tool_use("toolu_3", "create", {"path": "notes.md", "file_text": "n\n"}),
                   stop_reason="tool_use")
    fake_api.reply(text("The list says b."))
    run = gs(root, fake_api, "--agent", "writer", "run", "Keep a todo list.", "--model", "m")
    fake_api.done()
    assert run.returncode == 0, run.stderr
    [session] = listing(root)
    return root, session


def test_a_fork_starts_from_the_files_and_the_conversation_right_after_the_op(
        ran: tuple[Path, Session], fake_api: FakeAnthropic) -> None:
    root, original = ran
    [edit] = [op for op in ops(root) if op.tool == "str_replace"]
    main_before = git(root, "rev-parse", "main").strip()
    m = original.messages
    expected = [m[0], m[1], m[2], m[3], {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": m[4]["content"][0]["content"]},
        {"type": "tool_result", "tool_use_id": "toolu_3",
         "content": NOT_IN_FORK.format(op=edit.op_id), "is_error": True},
        {"type": "text", "text": "Make it c instead."}]}]
    assert m[4]["content"][0]["tool_use_id"] == "toolu_2" and len(m[4]["content"]) == 2

    def first_after_the_fork(body: dict[str, Any]) -> None:
        assert body["messages"] == expected

    fake_api.reply(tool_use("toolu_9", "str_replace", {"path": "todo.md", "old_str": "- b",
                                                       "new_str": "- c"}),
                   stop_reason="tool_use", check=first_after_the_fork)
    fake_api.reply(text("Now c."))
    forked = gs(root, fake_api, "--agent", "writer", "run", "--fork", edit.op_id[-8:],
                "Make it c instead.", "--model", "m")
    fake_api.done()
    assert forked.returncode == 0, forked.stderr
    branch = f"fork/{edit.op_id[-8:].lower()}"
    assert f"onto the new branch {branch}" in forked.stdout and "main is unchanged" in forked.stdout

    assert git(root, "rev-parse", "main").strip() == main_before  # the original did not move
    assert git(root, "branch", "--show-current").strip() == branch
    assert on_disk(root) == {".gitignore": on_disk(root)[".gitignore"], "todo.md": "- c\n"}
    assert git(root, "rev-parse", f"{branch}~1").strip() == git(
        root, "log", "--all", f"--grep=Gitspace-Op: {edit.op_id}", "--format=%H").strip()
    new = [s for s in listing(root) if s.id != original.id]
    assert len(new) == 1 and new[0].forked_from == {
        "op": edit.op_id, "session": original.id, "branch": "main", "tool_use_id": "toolu_2",
        "commit": git(root, "rev-parse", f"{branch}~1").strip()}
    [again] = [op for op in ops(root) if op.tool_use_id == "toolu_9"]
    assert again.session == new[0].id and again.agent == "writer"
    assert_clean(root)

    as_json = json.loads(gs(root, fake_api, "sessions", "show", new[0].id, "--json").stdout)
    assert as_json["status"] == "done"


def test_only_an_agents_op_with_its_conversation_here_can_be_forked(
        ran: tuple[Path, Session], fake_api: FakeAnthropic) -> None:
    root, original = ran
    by_hand = gs(root, fake_api, "call", "create", "--args", '{"path": "x.md", "file_text": "x"}')
    assert by_hand.returncode == 0
    hand_op = ops(root)[-1].op_id
    tip = git(root, "rev-parse", "HEAD").strip()
    refused = gs(root, fake_api, "run", "--fork", hand_op, "go on", "--model", "m")
    assert refused.returncode == 1 and "not made by a tool call of an agent session" in refused.stderr
    missing = gs(root, fake_api, "run", "--fork", "ZZZZZZZZ", "go on", "--model", "m")
    assert missing.returncode == 1 and "not an op id" in missing.stderr
    both = gs(root, fake_api, "run", "--fork", hand_op, "x", "--resume", original.id)
    assert both.returncode == 2
    [first] = [op for op in ops(root) if op.tool_use_id == "toolu_1"]
    empty = gs(root, fake_api, "run", "--fork", first.op_id, " ", "--model", "m")
    assert empty.returncode == 1 and "The task is empty" in empty.stderr

    # A conversation compacted past the call: the call is gone from it, so no fork.
    saved = Session.load(root, original.id)
    saved.messages = compaction.fit(saved.messages, 10, keep_last=1)
    assert "toolu_1" not in json.dumps(saved.messages)
    saved.save()
    folded = gs(root, fake_api, "run", "--fork", first.op_id, "again", "--model", "m")
    assert folded.returncode == 1 and "compacted past it" in folded.stderr
    assert git(root, "branch", "--format=%(refname:short)").split() == ["main"]
    assert git(root, "rev-parse", "HEAD").strip() == tip
    assert fake_api.requests and len(listing(root)) == 1
    assert_clean(root)
