"""``gitspace fork OP`` with the real ``claude`` binary, in a workspace and in a person's own
checkout: a session of three Writes, a fork at the second, and ``claude -p --resume NEW``.

What the fake Messages API sees is the proof of the conversation: the resumed fork sends the
first two calls' results and not the third's. The files are as right after the second call,
the original session and its transcript are byte for byte as they were, and the fork's own calls
are recorded (on its own branch in a workspace; in place on the line, under its own session id).
``gitspace ui``'s fork page shows the two runs side by side.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from claude_code import ClaudeCode, new_session
from conftest import assert_clean, files, git, ops
from fake_anthropic import FakeAnthropic, text, tool_use
from user_repo import fsck, make_user_repo, users_own

import gitspace

GITSPACE = [sys.executable, "-m", "gitspace"]


def gs(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*GITSPACE, "-C", str(root), *args], capture_output=True, text=True)
    assert not check or proc.returncode == 0, f"gitspace {args} failed:\n{proc.stdout}{proc.stderr}"
    return proc


def results_sent(body: dict[str, Any]) -> list[str]:
    """The tool-use ids of every tool_result the request carries, in order."""
    return [b["tool_use_id"] for m in body["messages"] if m["role"] == "user"
            and isinstance(m["content"], list) for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"]


def three_writes(claude: ClaudeCode, fake: FakeAnthropic, root: Path) -> str:
    """A session whose three calls each write a file; its id."""
    sid = new_session()
    for n in (1, 2, 3):
        fake.reply(text(f"writing {n}"), tool_use(f"toolu_w{n}", "Write", {
            "file_path": str(root / f"f{n}.txt"), "content": f"{n}\n"}),
            stop_reason="tool_use", session=sid)
    fake.reply(text("three written"), session=sid)
    claude.run_ok(root, "write three files", session=sid)
    return sid


def continue_fork(claude: ClaudeCode, fake: FakeAnthropic, root: Path, new: str) -> None:
    """``claude -p --resume NEW``: the model sees w1's and w2's results and not w3's, and makes
    one more Write, which the hooks record."""
    seen: list[list[str]] = []

    def first(body: dict[str, Any]) -> None:
        seen.append(results_sent(body))
        assert results_sent(body) == ["toolu_w1", "toolu_w2"], results_sent(body)
        assert "writing 3" not in json.dumps(body["messages"])

    fake.reply(tool_use("toolu_n1", "Write", {"file_path": str(root / "n.txt"),
                                              "content": "fork\n"}),
               stop_reason="tool_use", session=new, check=first)
    fake.reply(text("forked and written"), session=new,
               check=lambda body: seen.append(results_sent(body)))
    claude.run_ok(root, "go on differently", session=new, resume=True)
    assert seen[-1] == ["toolu_w1", "toolu_w2", "toolu_n1"]


def op_of(root: Path, use_id: str, rev: str = "HEAD") -> Any:
    return next(op for op in ops(root, rev) if op.tool_use_id == use_id)


def test_a_fork_in_a_workspace_is_a_branch_and_a_new_session(
        claude_code: ClaudeCode, fake_api: FakeAnthropic, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    gitspace.init(root).close()
    gs(root, "hooks", "install", "claude-code")
    sid = three_writes(claude_code, fake_api, root)
    [original] = claude_code.transcripts()
    before = original.read_bytes(), original.stat().st_mtime_ns
    second = op_of(root, "toolu_w2")
    main_tip = git(root, "rev-parse", "main").strip()

    out = json.loads(gs(root, "fork", second.op_id[-8:], "--json").stdout)
    new = out["session"]
    assert out["command"] == f"claude --resume {new}" and out["harness"] == "claude-code"
    assert out["forked_from"] == {"session": sid, "op": second.op_id,
                                  "commit": git(root, "rev-parse", "main~1").strip(),
                                  "tool_use_id": "toolu_w2"}
    assert out["branch"] == f"fork/{second.op_id[-8:].lower()}" and out["cwd"] == str(root)
    assert (original.read_bytes(), original.stat().st_mtime_ns) == before
    forked = original.with_name(f"{new}.jsonl")
    assert out["transcript"] == str(forked) and forked.stat().st_mode & 0o777 == 0o600
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == out["branch"]
    assert git(root, "rev-parse", "HEAD").strip() == out["forked_from"]["commit"]
    assert "f2.txt" in files(root) and "f3.txt" not in files(root)
    assert git(root, "rev-parse", "main").strip() == main_tip, "the original's branch stays"
    assert_clean(root)

    continue_fork(claude_code, fake_api, root, new)
    fake_api.done()
    assert (original.read_bytes(), original.stat().st_mtime_ns) == before
    mine = op_of(root, "toolu_n1")
    assert (mine.session, mine.agent, mine.paths) == (new, "claude-code", ("n.txt",))
    assert "n.txt" in files(root) and "f3.txt" not in files(root)
    assert [op.tool_use_id for op in ops(root, "main") if op.source == "harness"] == [
        "toolu_w1", "toolu_w2", "toolu_w3"]
    assert f"gitspace/claude-code-{new[:8]}-turn-1" in git(root, "tag", "--list").split()
    assert_clean(root)
    gs(root, "verify")


def test_a_fork_in_your_own_checkout_moves_nothing_of_yours(
        claude_code: ClaudeCode, fake_api: FakeAnthropic, tmp_path: Path) -> None:
    user = make_user_repo(tmp_path / "repo")  # staged, unstaged, untracked and ignored files
    gs(user, "hooks", "install", "claude-code")
    sid = three_writes(claude_code, fake_api, user)
    [original] = claude_code.transcripts()
    before = original.read_bytes()
    theirs = users_own(user)
    second = op_of(user, "toolu_w2", "refs/gitspace/lines/main")

    out = gs(user, "fork", second.op_id)
    assert "Continue it with:" in out.stdout and "claude --resume " in out.stdout
    new = out.stdout.split("claude --resume ")[1].split()[0]
    assert original.read_bytes() == before
    now = users_own(user)
    assert now.pop("files") == {k: v for k, v in theirs.pop("files").items() if k != "f3.txt"}
    assert now.pop("status") == [s for s in theirs.pop("status") if "f3.txt" not in s]
    assert now == theirs, "HEAD, refs, the index and its stat, the stash and tags are as they were"
    fork_op = ops(user, "refs/gitspace/lines/main")[-1]
    third = op_of(user, "toolu_w3", "refs/gitspace/lines/main")
    assert (fork_op.tool, fork_op.session, fork_op.undo_of) == ("fork", new, (third.op_id,))
    assert fork_op.args == {"op": second.op_id, "session": sid, "harness": "claude-code",
                            "new_session": new}

    continue_fork(claude_code, fake_api, user, new)
    fake_api.done()
    line = ops(user, "refs/gitspace/lines/main")
    assert [(op.tool, op.session) for op in line[-2:]] == [("fork", new), ("Write", new)]
    assert (user / "n.txt").read_text() == "fork\n" and original.read_bytes() == before
    after = users_own(user)
    after.pop("files"), after.pop("status")
    assert after == theirs

    # The fork's op is an op like any other: undo brings the third file back.
    gs(user, "undo", "--op", fork_op.op_id)
    assert (user / "f3.txt").read_text() == "3\n" and (user / "n.txt").exists()
    fsck(user)
