"""Codex CLI's tool calls become ops: the real ``codex`` binary, its real hooks, our streaming fake
Responses API, in a workspace and in a person's own checkout.

Each file-changing call (``apply_patch``, a shell command) is one op with Codex's own call id and
session (thread) id; a command that exited non-zero is recorded as failed; a patch that does not
apply records nothing; each turn is marked; ``gitspace rewind`` and ``gitspace undo`` work on them.
Codex runs only hooks someone trusted: ``gitspace hooks install codex`` says so, and ``--trust``
has Codex trust exactly gitspace's.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from codex_cli import Codex
from conftest import assert_clean, files, git, ops
from fake_responses import FakeResponses, message, outputs, patch, shell
from user_repo import users_own

import gitspace
from gitspace.storage import ids  # (a turn mark names the session's short form)

ADD = "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** End Patch\n"
CAPITALISE = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n*** End Patch\n"
ONE = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n TWO\n*** End Patch\n"
MISSING = "*** Begin Patch\n*** Update File: nope.txt\n@@\n-x\n+y\n*** End Patch\n"


def harness_ops(root: Path, rev: str = "HEAD") -> list[Any]:
    return [op for op in ops(root, rev) if op.source == "harness"]


def message_for(root: Path, use_id: str, rev: str = "HEAD") -> str:
    """The commit message of the op of call ``use_id``."""
    return git(root, "log", "-1", "--format=%B", f"--grep=^Gitspace-Tool-Use-Id: {use_id}$", rev)


def first_turn(fake: FakeResponses) -> None:
    fake.reply(patch("call_p1", ADD))
    fake.reply(shell("call_s1", "echo x > b.txt && mkdir -p d && echo y > d/c.txt"))
    fake.reply(shell("call_s2", "echo z > e.txt; exit 3"))
    fake.reply(patch("call_p2", CAPITALISE))
    fake.reply(patch("call_p3", MISSING))
    fake.reply(message("done"),
               check=lambda body: "verification failed" in outputs(body)["call_p3"])


def workspace(codex: Codex, root: Path) -> Path:
    gitspace.init(root).close()
    out = codex.gitspace(root, "hooks", "install", "codex")
    assert "Installed gitspace's Codex hooks" in out.stdout
    assert "only in a project you trust" in out.stdout, "Codex's own review step is named"
    assert_clean(root)
    return root


def test_every_call_that_changed_files_is_one_op_in_a_workspace(
        codex: Codex, fake_responses: FakeResponses, tmp_path: Path) -> None:
    root = workspace(codex, tmp_path / "ws")
    first_turn(fake_responses)
    # --trust: the person trusts the project (as Codex asks them to); the hooks themselves are
    # let run by the flag Codex documents for automation.
    thread = codex.run_ok(root, "make the files", args=("--trust",)).thread
    turn_one = files(root)
    fake_responses.reply(patch("call_p4", ONE))
    fake_responses.reply(message("second done"))
    codex.run_ok(root, "now capitalise", resume=thread)
    fake_responses.done()

    recorded = harness_ops(root)
    assert [(op.tool, op.tool_use_id, op.paths) for op in recorded] == [
        ("apply_patch", "call_p1", ("a.txt",)), ("Bash", "call_s1", ("b.txt", "d/c.txt")),
        ("Bash", "call_s2", ("e.txt",)), ("apply_patch", "call_p2", ("a.txt",)),
        ("apply_patch", "call_p4", ("a.txt",))]
    assert all(op.agent == "codex" and op.session == thread for op in recorded)
    assert recorded[0].args == {"command": ADD}
    assert recorded[1].args == {"command": "echo x > b.txt && mkdir -p d && echo y > d/c.txt"}
    assert "The call failed (exit code 3)" in message_for(root, "call_s2")
    assert "failed" not in message_for(root, "call_s1")
    assert [op.source for op in ops(root)] == ["init", "external", *["harness"] * 5]
    assert_clean(root)

    prefix = f"codex-{ids.session_body(thread)}"
    assert git(root, "tag", "--list", "gitspace/*").split() == [
        f"gitspace/{prefix}-turn-1", f"gitspace/{prefix}-turn-2"]
    message_of = git(root, "tag", "-l", "--format=%(contents)", f"gitspace/{prefix}-turn-1")
    assert f"Codex session {thread}, turn 1 (prompt " in message_of
    assert f"Transcript (not committed): {codex.transcripts()[0]}" in message_of
    listing = json.loads(codex.gitspace(root, "rewind", "--json").stdout)
    assert [t["turn"] for t in listing] == [1, 2]
    codex.gitspace(root, "rewind", "1")
    assert files(root) == turn_one
    codex.gitspace(root, "undo", "--op", recorded[1].op_id)
    assert "b.txt" not in files(root) and "d/c.txt" not in files(root)
    assert files(root)["a.txt"] == "one\nTWO\n"
    assert_clean(root)
    codex.gitspace(root, "verify")


def test_codex_runs_gitspaces_hooks_once_trusted_and_hooks_status_says_so(
        codex: Codex, fake_responses: FakeResponses, tmp_path: Path) -> None:
    root = workspace(codex, tmp_path / "ws")

    def codex_row() -> dict[str, Any]:
        rows = json.loads(codex.gitspace(root, "hooks", "status", "--json").stdout)
        return next(r for r in rows if (r["harness"], r["scope"]) == ("codex", "project"))

    assert codex_row()["trust"] == "untrusted" and "Trust the folder" in codex_row()["note"]
    # The person trusts the project; Codex still skips the hooks no one reviewed, silently.
    fake_responses.reply(shell("call_s1", "echo x > b.txt"))
    fake_responses.reply(message("done"))
    codex.run_ok(root, "make a file", trusted=False, args=("--trust",))
    assert harness_ops(root) == [], "Codex ran no hook"
    row = codex_row()
    assert row["installed"] is True and row["trust"] == "untrusted"
    assert "has not trusted 5 of gitspace's 5 hooks" in row["note"]
    assert "not trusted" in codex.gitspace(root, "hooks", "status").stdout

    out = codex.gitspace(root, "hooks", "install", "codex", "--trust")
    assert "Codex trusts gitspace's 5 hooks there" in out.stdout
    assert codex_row()["trust"] == "trusted" and codex_row()["note"] is None
    config = (codex.home / ".codex" / "config.toml").read_text()
    assert config.count("trusted_hash = ") == 5, "gitspace's hooks, and nothing else"
    fake_responses.reply(shell("call_s2", "echo y > c.txt"))
    fake_responses.reply(message("done"))
    codex.run_ok(root, "make another", trusted=False)
    fake_responses.done()
    # b.txt was changed while no hook ran: it is an outside change, found at the next call.
    assert [(op.tool_use_id, op.paths) for op in harness_ops(root)] == [("call_s2", ("c.txt",))]
    assert ops(root)[-2].source == "external" and ops(root)[-2].args["paths"] == ["b.txt"]


def test_recorded_in_place_in_a_persons_own_checkout(
        codex: Codex, fake_responses: FakeResponses, tmp_path: Path) -> None:
    from user_repo import make_user_repo

    user = make_user_repo(tmp_path / "repo")
    out = codex.gitspace(user, "hooks", "install", "codex", "--trust")
    assert "in place" in out.stdout and "Codex trusts gitspace's 5 hooks" in out.stdout
    assert (codex.home / ".codex" / "hooks.json").exists(), "in the person's own settings"
    before = users_own(user, ignore=())
    fake_responses.reply(patch("call_p1", ADD))
    fake_responses.reply(shell("call_s1", "mkdir -p gen && echo one > gen/a.txt"))
    fake_responses.reply(patch("call_p2", CAPITALISE))
    fake_responses.reply(message("done"))
    thread = codex.run_ok(user, "make the files", trusted=False).thread
    fake_responses.done()

    line = "refs/gitspace/lines/main"
    recorded = harness_ops(user, line)
    assert [(op.tool, op.tool_use_id, op.paths) for op in recorded] == [
        ("apply_patch", "call_p1", ("a.txt",)), ("Bash", "call_s1", ("gen/a.txt",)),
        ("apply_patch", "call_p2", ("a.txt",))]
    assert {(op.agent, op.session) for op in recorded} == {("codex", thread)}
    after = users_own(user, ignore=())
    for rel in ("a.txt", "gen/a.txt"):  # what the agent wrote, and nothing else of theirs
        after["files"].pop(rel)
    assert {k: v for k, v in after.items() if k != "status"} == {
        k: v for k, v in before.items() if k != "status"}
    assert git(user, "for-each-ref", "--format=%(refname)", "refs/gitspace/turns").split() == [
        f"refs/gitspace/turns/codex-{ids.session_body(thread)}-turn-1"]

    codex.gitspace(user, "undo", "--op", recorded[1].op_id)
    assert not (user / "gen" / "a.txt").exists() and (user / "a.txt").read_text() == "one\nTWO\n"
    codex.gitspace(user, "rewind", recorded[0].op_id)
    assert (user / "a.txt").read_text() == "one\ntwo\n"
    final = users_own(user, ignore=())
    final["files"].pop("a.txt")
    assert final["files"] == before["files"] and final["index"] == before["index"]
    assert final["HEAD"] == before["HEAD"]


def test_a_command_codex_leaves_running_shares_its_writes_with_the_next_one(
        codex: Codex, fake_responses: FakeResponses, tmp_path: Path) -> None:
    """Codex hands a long command back unfinished (PreToolUse, and no PostToolUse, ever) and
    runs the next while it goes on: two commands running at once cannot be told apart, so the
    next one to finish records what both wrote, and names the other."""
    root = workspace(codex, tmp_path / "ws")
    # exec_command hands back after yield_time_ms while the command runs on.
    fake_responses.reply({"type": "function_call", "call_id": "call_bg", "name": "exec_command",
                          "arguments": json.dumps({"cmd": "sleep 1; echo late > late.txt",
                                                   "yield_time_ms": 250})})
    fake_responses.reply(shell("call_wait", "sleep 2; echo now > now.txt"))
    fake_responses.reply(message("done"))
    codex.run_ok(root, "start it", args=("--trust",))
    fake_responses.done()
    assert [(op.tool_use_id, op.paths) for op in harness_ops(root)] == [
        ("call_wait", ("late.txt", "now.txt"))]
    assert "Other commands ran at the same time (Bash call_bg)" in git(
        root, "log", "-1", "--format=%B", "HEAD")
    assert not [op for op in ops(root) if op.source == "external"
                and {"late.txt", "now.txt"} & set(op.args.get("paths", []))]
    assert_clean(root)


def test_an_interrupted_turn_is_marked_and_what_it_changed_is_recorded(
        codex: Codex, fake_responses: FakeResponses, tmp_path: Path) -> None:
    from codex_cli import interrupt

    root = workspace(codex, tmp_path / "ws")
    fake_responses.reply(shell("call_s1", "echo x > b.txt; sleep 30; echo y > c.txt"))
    running = codex.start(root, "go", args=("--trust",))
    try:
        deadline = time.monotonic() + 60
        while not (root / "b.txt").exists():  # the command runs: the person presses Ctrl-C
            assert running.poll() is None and time.monotonic() < deadline, running.communicate()
            time.sleep(0.1)
        interrupt(running)
        running.wait(60)
    finally:
        if running.poll() is None:
            running.kill()
    fake_responses.done()
    tags = git(root, "tag", "--list", "gitspace/codex-*").split()
    assert len(tags) == 1 and tags[0].endswith("-turn-1"), "the interrupted turn has its mark"
    assert not (root / "c.txt").exists()
    # What the stopped command wrote is recorded at the turn's end, nothing left pending.
    assert git(root, "ls-tree", "--name-only", tags[0], "b.txt").strip() == "b.txt"
    assert_clean(root)


def test_both_installs_at_once_count_each_event_once(
        codex: Codex, fake_responses: FakeResponses, tmp_path: Path) -> None:
    root = workspace(codex, tmp_path / "ws")
    codex.gitspace(root, "hooks", "install", "codex", "--scope", "user")
    fake_responses.reply(patch("call_p1", ADD))
    fake_responses.reply(message("done"))
    thread = codex.run_ok(root, "make a file", args=("--trust",)).thread
    fake_responses.reply(message("done again"))
    codex.run_ok(root, "again", resume=thread)
    fake_responses.done()
    assert [(op.tool_use_id, op.paths) for op in harness_ops(root)] == [("call_p1", ("a.txt",))]
    prefix = f"gitspace/codex-{ids.session_body(thread)}"
    assert git(root, "tag", "--list", "gitspace/*").split() == [f"{prefix}-turn-1",
                                                                f"{prefix}-turn-2"]


def test_an_mcp_tool_that_writes_a_file_is_one_op_with_its_call_id(
        codex: Codex, fake_responses: FakeResponses, tmp_path: Path) -> None:
    import sys

    server = Path(__file__).resolve().parents[1] / "mcp_notes.py"
    with (codex.home / ".codex" / "config.toml").open("a") as config:
        config.write(f'\n[mcp_servers.notes]\ncommand = "{sys.executable}"\nargs = ["{server}"]\n')
    root = workspace(codex, tmp_path / "ws")
    # Codex offers MCP tools only once the model searched for them, in a namespace.
    fake_responses.reply({"type": "tool_search_call", "call_id": "call_ts", "execution": "client",
                          "arguments": {"query": "write a note"}, "status": "completed"})
    for call_id, text in (("call_m1", "note\n"), ("call_m2", "fail")):
        fake_responses.reply({"type": "function_call", "call_id": call_id,
                              "namespace": "mcp__notes", "name": "write_note",
                              "arguments": json.dumps({"name": f"{call_id}.md", "text": text})})
    fake_responses.reply(message("done"))
    out = codex.run_ok(root, "write notes", args=("--trust",))
    fake_responses.done()
    assert [item["status"] for item in out.items("mcp_tool_call")] == ["completed", "failed"]
    assert [(op.tool, op.tool_use_id, op.paths) for op in harness_ops(root)] == [
        ("mcp__notes__write_note", "call_m1", ("call_m1.md",)),
        ("mcp__notes__write_note", "call_m2", ("call_m2.md",))]
    assert harness_ops(root)[0].args == {"name": "call_m1.md", "text": "note\n"}
    # The failed call got no PostToolUse: what it wrote is recorded when the turn ends, under
    # its own call id, and its op says why it came then.
    assert "sent no after hook for this call" in git(root, "log", "-1", "--format=%B", "HEAD")
    assert not [op for op in ops(root) if op.source == "external"
                and "call_m2.md" in op.args.get("paths", [])]
    assert_clean(root)
