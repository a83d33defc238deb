"""Claude Code's tool calls become ops: the real ``claude`` binary, its real hooks, our streaming fake.

The flow the issue asks for: a Write, an Edit, a failing Edit and a Bash that creates two files,
then a second turn; one op per call that changed files (with Claude Code's own tool-use ids and
session id), a checkpoint per turn, ``gitspace rewind`` to turn 1, a clean ``git status``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from claude_code import ClaudeCode, new_session
from conftest import assert_clean, files, git, ops
from fake_anthropic import FakeAnthropic, text, tool_use
from user_repo import checkout_state, make_user_repo, status

import gitspace

GITSPACE = str(Path(sys.executable).parent / "gitspace")


def gs(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([GITSPACE, "-C", str(root), *args], capture_output=True, text=True)
    assert not check or proc.returncode == 0, f"gitspace {args} failed:\n{proc.stdout}{proc.stderr}"
    return proc


def workspace_with_hooks(root: Path) -> Path:
    gitspace.init(root).close()
    out = gs(root, "hooks", "install", "claude-code")
    assert "Installed gitspace's Claude Code hooks" in out.stdout
    assert_clean(root)
    return root


def result_of(body: dict[str, Any], use_id: str) -> dict[str, Any]:
    last = [m for m in body["messages"] if m["role"] == "user"][-1]
    return next(b for b in last["content"] if isinstance(b, dict)
                and b.get("type") == "tool_result" and b.get("tool_use_id") == use_id)


def script_first_turn(fake: FakeAnthropic, root: Path, sid: str, tag: str = "") -> None:
    a = str(root / f"a{tag}.txt")

    def edit_refused(body: dict[str, Any]) -> None:
        assert result_of(body, f"toolu_e2{tag}").get("is_error") is True

    fake.reply(text("writing"), tool_use(f"toolu_w1{tag}", "Write",
                                         {"file_path": a, "content": "one\ntwo\n"}),
               stop_reason="tool_use", session=sid)
    fake.reply(tool_use(f"toolu_e1{tag}", "Edit", {"file_path": a, "old_string": "two",
                                                   "new_string": "TWO"}),
               stop_reason="tool_use", session=sid)
    fake.reply(tool_use(f"toolu_e2{tag}", "Edit", {"file_path": a, "old_string": "absent",
                                                   "new_string": "x"}),
               stop_reason="tool_use", session=sid)
    fake.reply(tool_use(f"toolu_b1{tag}", "Bash",
                        {"command": f"echo x > b{tag}.txt && mkdir -p d && echo y > d/c{tag}.txt"}),
               stop_reason="tool_use", session=sid, check=edit_refused)
    fake.reply(text("done"), session=sid)


def script_second_turn(fake: FakeAnthropic, root: Path, sid: str, tag: str = "") -> None:
    fake.reply(tool_use(f"toolu_e3{tag}", "Edit", {"file_path": str(root / f"a{tag}.txt"),
                                                   "old_string": "one", "new_string": "ONE"}),
               stop_reason="tool_use", session=sid)
    fake.reply(text("second done"), session=sid)


def harness_ops(root: Path) -> list[Any]:
    return [op for op in ops(root) if op.source == "harness"]


def test_every_tool_call_that_changed_files_is_one_op(claude_code: ClaudeCode,
                                                      fake_api: FakeAnthropic,
                                                      tmp_path: Path) -> None:
    root = workspace_with_hooks(tmp_path / "ws")
    sid = new_session()
    script_first_turn(fake_api, root, sid)
    claude_code.run_ok(root, "make the files", session=sid)
    turn_one = files(root)
    script_second_turn(fake_api, root, sid)
    claude_code.run_ok(root, "now capitalise", session=sid, resume=True)
    fake_api.done()

    recorded = harness_ops(root)
    assert [(op.tool, op.tool_use_id) for op in recorded] == [
        ("Write", "toolu_w1"), ("Edit", "toolu_e1"), ("Bash", "toolu_b1"), ("Edit", "toolu_e3")]
    assert all(op.agent == "claude-code" and op.session == sid for op in recorded)
    write, edit, bash, edit2 = recorded
    assert write.args == {"file_path": "a.txt", "content": "one\ntwo\n"}
    assert edit.args == {"file_path": "a.txt", "old_string": "two", "new_string": "TWO",
                         "replace_all": False}
    assert bash.args["command"].startswith("echo x > b.txt")
    assert [write.paths, edit.paths, bash.paths, edit2.paths] == [
        ("a.txt",), ("a.txt",), ("b.txt", "d/c.txt"), ("a.txt",)]
    assert "toolu_e2" not in {op.tool_use_id for op in ops(root)}, "the refused Edit left no op"
    # Nothing else happened: no outside edit, and the trailers say so in plain git.
    assert [op.source for op in ops(root)] == ["init", "external", *["harness"] * 4]
    trailers = git(root, "log", "-1", "--format=%(trailers:key=Gitspace-Tool-Use-Id,valueonly)",
                   "HEAD~1")
    assert trailers.strip() == "toolu_b1"
    assert git(root, "log", "-1", "--format=%an", "HEAD").strip() == "claude-code"

    prefix = f"claude-code-{sid[:8]}"
    tags = git(root, "tag", "--list", "gitspace/*").split()
    assert tags == [f"gitspace/{prefix}-turn-1", f"gitspace/{prefix}-turn-2"]
    assert git(root, "rev-parse", f"gitspace/{prefix}-turn-1^{{commit}}").strip() == \
        git(root, "rev-parse", "HEAD~1").strip()
    message = git(root, "tag", "-l", "--format=%(contents)", f"gitspace/{prefix}-turn-1")
    assert f"session {sid}, turn 1 (prompt " in message
    assert f"Transcript (not committed): {claude_code.transcripts()[0]}" in message
    assert_clean(root)

    listing = gs(root, "rewind", "--json")
    assert [t["turn"] for t in json.loads(listing.stdout)] == [1, 2]
    rewound = gs(root, "rewind", "1")
    assert "Restored checkpoint" in rewound.stdout
    assert files(root) == turn_one
    assert ops(root)[-1].tool == "restore" and ops(root)[-1].source == "tool"
    assert_clean(root)
    gs(root, "rewind", write.op_id)
    assert files(root)["a.txt"] == "one\ntwo\n" and "b.txt" not in files(root)
    assert_clean(root)
    gs(root, "verify")


def test_in_your_own_repository_through_attach_at_a_folder_of_its_own(
        claude_code: ClaudeCode, fake_api: FakeAnthropic, tmp_path: Path) -> None:
    # Claude Code refuses to edit under .git, so the agent's worktree goes beside the repository.
    user = make_user_repo(tmp_path / "repo")  # with staged, unstaged, untracked, ignored files
    before, listed = checkout_state(user), status(user)
    place = tmp_path / "repo-claude"
    assert str(place) in gs(user, "attach", "--agent", "claude-code", "--at", str(place)).stdout
    gs(place, "hooks", "install", "claude-code")
    sid = new_session()
    script_first_turn(fake_api, place, sid)
    claude_code.run_ok(place, "make the files", session=sid)
    turn_one = files(place)
    script_second_turn(fake_api, place, sid)
    claude_code.run_ok(place, "now capitalise", session=sid, resume=True)
    fake_api.done()

    recorded = [op for op in ops(user, "agent/claude-code") if op.source == "harness"]
    assert [(op.tool, op.tool_use_id, op.paths) for op in recorded] == [
        ("Write", "toolu_w1", ("a.txt",)), ("Edit", "toolu_e1", ("a.txt",)),
        ("Bash", "toolu_b1", ("b.txt", "d/c.txt")), ("Edit", "toolu_e3", ("a.txt",))]
    assert all(op.agent == "claude-code" and op.session == sid for op in recorded)
    assert [op.source for op in ops(user, "agent/claude-code")] == ["external", *["harness"] * 4]
    prefix = f"gitspace/claude-code-{sid[:8]}"
    assert git(user, "tag", "--list", "gitspace/*").split() == [f"{prefix}-turn-1",
                                                                f"{prefix}-turn-2"]
    assert checkout_state(user) == before and status(user) == listed, "your checkout is untouched"
    assert git(user, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert_clean(place)
    gs(place, "rewind", "1")
    assert files(place) == turn_one
    assert checkout_state(user) == before and status(user) == listed
    rows = json.loads(gs(user, "agents", "--json").stdout)
    assert [(r["agent"], r["path"], r["ops"]) for r in rows] == [("claude-code", str(place), 6)]


def test_two_sessions_at_once_lose_no_op(claude_code: ClaudeCode, fake_api: FakeAnthropic,
                                         tmp_path: Path) -> None:
    root = workspace_with_hooks(tmp_path / "ws")
    sessions = {"A": new_session(), "B": new_session()}
    for tag, sid in sessions.items():
        script_first_turn(fake_api, root, sid, tag)
    failures: list[BaseException] = []

    def run(tag: str) -> None:
        try:
            claude_code.run_ok(root, "make the files", session=sessions[tag])
        except BaseException as e:  # noqa: BLE001  (re-raised below)
            failures.append(e)

    threads = [threading.Thread(target=run, args=(tag,)) for tag in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[0]
    fake_api.done()

    recorded = harness_ops(root)
    by_id = {op.tool_use_id: op for op in recorded}
    for tag, sid in sessions.items():
        for use_id in (f"toolu_w1{tag}", f"toolu_e1{tag}"):
            assert by_id[use_id].session == sid and by_id[use_id].paths == (f"a{tag}.txt",)
        assert f"toolu_e2{tag}" not in by_id
    bashes = [op for op in recorded if op.tool == "Bash"]
    claimed = sorted(p for op in bashes for p in op.paths or ())
    # Every file the two commands wrote is in exactly one op; commands that overlapped in time
    # share one op and say so in its message.
    assert claimed == ["b" + "A.txt", "bB.txt", "d/cA.txt", "d/cB.txt"]
    assert len(bashes) in (1, 2)
    assert len(recorded) == 4 + len(bashes)
    assert {op.source for op in ops(root)} == {"init", "external", "harness"}
    assert_clean(root)
    tags = git(root, "tag", "--list", "gitspace/*").split()
    assert sorted(tags) == sorted(f"gitspace/claude-code-{sid[:8]}-turn-1"
                                  for sid in sessions.values())


def test_committed_hooks_record_in_a_clone_on_another_machine(
        claude_code: ClaudeCode, fake_api: FakeAnthropic, tmp_path: Path) -> None:
    # Machine A installs the hooks through a gitspace of its own, then is gone.
    machine_a = tmp_path / "machine-a"
    machine_a.mkdir()
    shutil.copy2(GITSPACE, machine_a / "gitspace")
    origin = tmp_path / "ws"
    gitspace.init(origin).close()
    installed = subprocess.run([str(machine_a / "gitspace"), "-C", str(origin), "hooks", "install",
                                "claude-code"], capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    shutil.rmtree(machine_a)
    clone = tmp_path / "machine-b" / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    settings = json.loads((clone / ".claude" / "settings.json").read_text())
    assert {h["command"] for groups in settings["hooks"].values() for g in groups
            for h in g["hooks"]} == {"gitspace hook claude-code"}
    sid = new_session()
    fake_api.reply(tool_use("toolu_w1", "Write", {"file_path": str(clone / "a.txt"),
                                                  "content": "from the clone\n"}),
                   stop_reason="tool_use", session=sid)
    fake_api.reply(text("done"), session=sid)
    claude_code.run_ok(clone, "write", session=sid)
    fake_api.done()
    assert [(op.tool, op.tool_use_id) for op in harness_ops(clone)] == [("Write", "toolu_w1")]
    assert_clean(clone)


def test_both_installs_at_once_count_each_event_once(claude_code: ClaudeCode,
                                                      fake_api: FakeAnthropic,
                                                      tmp_path: Path) -> None:
    root = workspace_with_hooks(tmp_path / "ws")
    out = subprocess.run([GITSPACE, "-C", str(root), "hooks", "install", "claude-code", "--scope",
                          "user"], capture_output=True, text=True,
                         env=claude_code.env())
    assert out.returncode == 0, out.stderr
    sid = new_session()
    fake_api.reply(tool_use("toolu_w1", "Write", {"file_path": str(root / "a.txt"),
                                                  "content": "a\n"}),
                   stop_reason="tool_use", session=sid)
    fake_api.reply(text("done"), session=sid)
    claude_code.run_ok(root, "write", session=sid)
    fake_api.done()
    assert [(op.tool, op.tool_use_id) for op in harness_ops(root)] == [("Write", "toolu_w1")]
    assert git(root, "tag", "--list", "gitspace/*").split() == [
        f"gitspace/claude-code-{sid[:8]}-turn-1"]
