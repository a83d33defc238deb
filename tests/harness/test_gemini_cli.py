"""Gemini CLI's tool calls become ops: the real ``gemini`` binary, its real hooks, our streaming
fake Gemini API, in a workspace and in a person's own checkout.

Each file-changing call (``write_file``, ``replace``, ``run_shell_command``) is one op; a command
that exited non-zero is recorded as failed; a ``replace`` that found nothing records nothing;
each turn is marked; ``gitspace rewind`` and ``gitspace undo`` work on them. Gemini CLI gives a
hook no call id, and writes one to its transcript only after the call's last hook: each op is
held until the session's next event and carries the id then.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import assert_clean, files, git, ops
from fake_gemini import FakeGemini, call, responses, text
from gemini_cli import Gemini, new_session
from user_repo import make_user_repo, users_own

import gitspace


def harness_ops(root: Path, rev: str = "HEAD") -> list[Any]:
    return [op for op in ops(root, rev) if op.source == "harness"]


def first_turn(fake: FakeGemini, root: Path) -> None:
    a = str(root / "a.txt")

    def failures_reported(body: dict[str, Any]) -> None:
        said = [r["response"] for r in responses(body)]
        assert "Exit Code: 3" in said[3]["output"] and "error" in said[4]

    fake.reply(call("write_file", {"file_path": a, "content": "one\ntwo\n"}))
    fake.reply(call("replace", {"file_path": a, "old_string": "two", "new_string": "TWO",
                                "instruction": "capitalise"}))
    fake.reply(call("run_shell_command",
                    {"command": "echo x > b.txt && mkdir -p d && echo y > d/c.txt"}))
    fake.reply(call("run_shell_command", {"command": "echo z > e.txt; exit 3"}))
    fake.reply(call("replace", {"file_path": a, "old_string": "absent", "new_string": "x",
                                "instruction": "fails"}))
    fake.reply(text("done"), check=failures_reported)


def workspace(gemini: Gemini, root: Path) -> Path:
    gitspace.init(root).close()
    out = gemini.gitspace(root, "hooks", "install", "gemini-cli")
    assert "Installed gitspace's Gemini CLI hooks" in out.stdout
    timeouts = {h["timeout"] for groups in json.loads((root / ".gemini" / "settings.json")
                                                      .read_text())["hooks"].values()
                for g in groups for h in g["hooks"]}
    assert timeouts == {30_000}, "milliseconds, as Gemini CLI reads them"
    assert_clean(root)
    return root


def test_every_call_that_changed_files_is_one_op_in_a_workspace(
        gemini: Gemini, fake_gemini: FakeGemini, tmp_path: Path) -> None:
    root = workspace(gemini, tmp_path / "ws")
    sid = new_session()
    first_turn(fake_gemini, root)
    gemini.run_ok(root, "make the files", session=sid)
    turn_one = files(root)
    fake_gemini.reply(call("replace", {"file_path": str(root / "a.txt"), "old_string": "one",
                                       "new_string": "ONE", "instruction": "again"}))
    fake_gemini.reply(text("second done"))
    gemini.run_ok(root, "now capitalise", session=sid, resume=True)
    fake_gemini.done()

    recorded = harness_ops(root)
    assert [(op.tool, op.paths) for op in recorded] == [
        ("write_file", ("a.txt",)), ("replace", ("a.txt",)),
        ("run_shell_command", ("b.txt", "d/c.txt")), ("run_shell_command", ("e.txt",)),
        ("replace", ("a.txt",))]
    assert all(op.agent == "gemini-cli" and op.session == sid for op in recorded)
    assert recorded[0].args == {"file_path": "a.txt", "content": "one\ntwo\n"}
    messages = git(root, "log", "--format=%B%x00").split("\0")
    failed = [m for m in messages if "The call failed" in m]
    assert len(failed) == 1 and "(exit code 3)" in failed[0] and "e.txt" in failed[0]
    assert [op.source for op in ops(root)] == ["init", "external", *["harness"] * 5]
    assert_clean(root)

    prefix = f"gemini-cli-{sid[:8]}"
    assert git(root, "tag", "--list", "gitspace/*").split() == [
        f"gitspace/{prefix}-turn-1", f"gitspace/{prefix}-turn-2"]
    listing = json.loads(gemini.gitspace(root, "rewind", "--json").stdout)
    assert [t["turn"] for t in listing] == [1, 2]
    gemini.gitspace(root, "rewind", "1")
    assert files(root) == turn_one
    gemini.gitspace(root, "undo", "--op", recorded[2].op_id)
    assert "b.txt" not in files(root) and "d/c.txt" not in files(root)
    assert_clean(root)
    gemini.gitspace(root, "verify")


def test_recorded_in_place_in_a_persons_own_checkout(
        gemini: Gemini, fake_gemini: FakeGemini, tmp_path: Path) -> None:
    user = make_user_repo(tmp_path / "repo")
    out = gemini.gitspace(user, "hooks", "install", "gemini-cli")
    assert "in place" in out.stdout
    settings = gemini.settings()
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key", "merged, not lost"
    before = users_own(user, ignore=())
    fake_gemini.reply(call("write_file", {"file_path": str(user / "a.txt"),
                                          "content": "one\ntwo\n"}))
    fake_gemini.reply(call("run_shell_command", {"command": "mkdir -p gen && echo one > gen/a.txt"}))
    fake_gemini.reply(call("replace", {"file_path": str(user / "a.txt"), "old_string": "two",
                                       "new_string": "TWO", "instruction": "capitalise"}))
    fake_gemini.reply(text("done"))
    sid = new_session()
    gemini.run_ok(user, "make the files", session=sid)
    fake_gemini.done()

    recorded = harness_ops(user, "refs/gitspace/lines/main")
    assert [(op.tool, op.paths) for op in recorded] == [
        ("write_file", ("a.txt",)), ("run_shell_command", ("gen/a.txt",)),
        ("replace", ("a.txt",))]
    assert {(op.agent, op.session) for op in recorded} == {("gemini-cli", sid)}
    after = users_own(user, ignore=())
    for rel in ("a.txt", "gen/a.txt"):
        after["files"].pop(rel)
    assert {k: v for k, v in after.items() if k != "status"} == {
        k: v for k, v in before.items() if k != "status"}
    assert git(user, "for-each-ref", "--format=%(refname)", "refs/gitspace/turns").split() == [
        f"refs/gitspace/turns/gemini-cli-{sid[:8]}-turn-1"]
    gemini.gitspace(user, "undo", "--op", recorded[1].op_id)
    assert not (user / "gen" / "a.txt").exists() and (user / "a.txt").read_text() == "one\nTWO\n"
    gemini.gitspace(user, "rewind", recorded[0].op_id)
    assert (user / "a.txt").read_text() == "one\ntwo\n"


def test_each_op_carries_gemini_clis_own_call_id(gemini: Gemini, fake_gemini: FakeGemini,
                                                 tmp_path: Path) -> None:
    root = workspace(gemini, tmp_path / "ws")
    fake_gemini.reply(call("write_file", {"file_path": str(root / "a.txt"), "content": "a\n"},
                           id="w1"))
    fake_gemini.reply(call("run_shell_command", {"command": "echo b > b.txt"}, id="s1"))
    fake_gemini.reply(text("done"))
    gemini.run_ok(root, "make the files", session=new_session())
    fake_gemini.done()
    assert [op.tool_use_id for op in harness_ops(root)] == [
        "write_file__w1", "run_shell_command__s1"]
