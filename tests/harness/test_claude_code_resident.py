"""The real ``claude`` binary recording in place through the resident recorder (harness/resident/),
and with the resident killed in the middle of a session.

``gitspace hooks install claude-code`` writes http hooks that post to the checkout's resident,
each with the command beside it that records in its own process when the resident's port
refuses; ``SessionStart``'s command hook starts the resident. The person's checkout stays as it
was (index, HEAD, files), and every call that changed files is one op with its tool-use id.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from claude_code import ClaudeCode, new_session
from conftest import ops
from fake_anthropic import FakeAnthropic, text, tool_use
from user_repo import fsck, make_user_repo, users_own

from gitspace.harness.resident import home

LINE = "refs/gitspace/lines/main"
TOOLS = ("Write", "Read", "Edit", "Bash")


def gs(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"},
           "GITSPACE_RESIDENT": "on", "GITSPACE_RESIDENT_WATCH_FROM": "0"}  # (it watches)
    proc = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), *args], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"gitspace {args}:\n{proc.stdout}{proc.stderr}"
    return proc


@pytest.fixture
def repo(tmp_path: Path) -> Any:
    """A person's checkout with the hooks installed (resident on), and the resident stopped and
    forgotten afterwards, whatever the test did."""
    root = make_user_repo(tmp_path / "repo")
    gs(root, "hooks", "install", "claude-code")
    try:
        yield root
    finally:
        pid = home.alive(root / ".git")
        gs(root, "hooks", "uninstall", "claude-code")
        assert home.alive(root / ".git") is None, "hooks uninstall left the resident running"
        assert not (root / ".git" / home.FOLDER).exists()
        if pid is not None:
            with_pid_gone(pid)


def with_pid_gone(pid: int) -> None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return
    os.kill(pid, signal.SIGKILL)  # (one this test started: never left behind)


def settings(root: Path) -> dict[str, Any]:
    return json.loads((root / ".claude" / "settings.local.json").read_text())


def session(claude: ClaudeCode, fake: FakeAnthropic, root: Path,
            calls: list[dict[str, Any]], between: dict[int, Any] | None = None) -> None:
    """One ``claude -p`` session making ``calls`` in turn; ``between[n]`` runs before the
    model's turn that follows call n (so between two tool calls)."""
    sid = new_session()
    between = between or {}
    for n, block in enumerate(calls):
        fake.reply(block, stop_reason="tool_use", session=sid, check=between.get(n - 1))
    fake.reply(text("done"), session=sid, check=between.get(len(calls) - 1))
    claude.run_ok(root, "work", session=sid, tools=TOOLS)


def calls(root: Path, tag: str) -> list[dict[str, Any]]:
    p = lambda rel: str(root / rel)  # noqa: E731
    return [tool_use(f"toolu_w{tag}", "Write", {"file_path": p("docs/plan.md"),
                                                "content": f"# plan {tag}\n"}),
            tool_use(f"toolu_r{tag}", "Read", {"file_path": p("notes.txt")}),
            tool_use(f"toolu_e{tag}", "Edit", {"file_path": p("notes.txt"), "old_string": "three",
                                               "new_string": f"three {tag}"}),
            tool_use(f"toolu_b{tag}", "Bash", {"command": f"echo {tag} > gen-{tag}.txt"}),
            tool_use(f"toolu_x{tag}", "Write", {"file_path": p(f"docs/{tag}.md"),
                                                "content": f"{tag}\n"})]


def untouched(root: Path) -> dict[str, Any]:
    """What of the person's gitspace never moves (the agent's own changes to files aside)."""
    return {k: v for k, v in users_own(root).items() if k not in ("status", "files")}


def recorded(root: Path) -> list[tuple[str, str | None]]:
    return [(op.tool, op.tool_use_id) for op in ops(root, LINE) if op.source == "harness"]


def test_every_call_is_recorded_through_the_resident(claude_code: ClaudeCode,
                                                      fake_api: FakeAnthropic, repo: Path) -> None:
    # The command beside each http hook leaves a mark instead of recording: had any call gone
    # that way, the mark would be there.
    mark = repo.parent / "recorded-without-the-resident"
    data = settings(repo)
    for event, groups in data["hooks"].items():
        for group in groups:
            for hook in group["hooks"]:
                if hook["type"] == "command" and event != "SessionStart":
                    assert "/dev/tcp/127.0.0.1/" in hook["command"]
                    hook["command"] = hook["command"].replace(
                        "|| exec ", f"|| touch {mark} && exec ")
    (repo / ".claude" / "settings.local.json").write_text(json.dumps(data))
    theirs = untouched(repo)
    session(claude_code, fake_api, repo, calls(repo, "1"))
    session(claude_code, fake_api, repo, calls(repo, "2"))
    fake_api.done()

    assert recorded(repo) == [(tool, f"toolu_{k}{n}") for n in "12" for tool, k in
                              (("Write", "w"), ("Edit", "e"), ("Bash", "b"), ("Write", "x"))]
    assert not mark.exists(), "a call was recorded without the resident"
    assert home.alive(repo / ".git") is not None  # (until it is idle, or uninstalled)
    assert not any((repo / ".git" / home.FOLDER / "journal").iterdir()), "a request unrecorded"
    assert untouched(repo) == theirs
    fsck(repo)


def test_a_resident_killed_mid_session_loses_no_call(claude_code: ClaudeCode,
                                                      fake_api: FakeAnthropic, repo: Path) -> None:
    killed: list[int] = []

    def kill(_: dict[str, Any]) -> None:
        pid = home.alive(repo / ".git")
        assert pid is not None, "no resident ran before it was to be killed"
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    theirs = untouched(repo)
    session(claude_code, fake_api, repo, calls(repo, "1"), between={1: kill})
    session(claude_code, fake_api, repo, calls(repo, "2"), between={3: kill})
    fake_api.done()

    assert len(killed) == 2
    assert recorded(repo) == [(tool, f"toolu_{k}{n}") for n in "12" for tool, k in
                              (("Write", "w"), ("Edit", "e"), ("Bash", "b"), ("Write", "x"))]
    deadline = time.monotonic() + 10
    while home.alive(repo / ".git") in (None, *killed) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert home.alive(repo / ".git") not in (None, *killed), "no new resident was started"
    assert untouched(repo) == theirs
    fsck(repo)
