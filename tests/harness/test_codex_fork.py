"""``gitspace fork OP`` with the real Codex CLI, in a workspace and in a person's own checkout: a
session of three ``apply_patch`` calls, a fork at the second, then ``codex exec resume NEW``.

The fake Responses API sees what the resumed fork sends: the first two calls and their outputs,
not the third. The files are as right after the second call, the original rollout is byte for
byte as it was, and the fork's own call is recorded under the new session's id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codex_cli import Codex
from conftest import assert_clean, files, git, ops
from fake_responses import FakeResponses, message, patch
from user_repo import fsck, make_user_repo, users_own

import gitspace

LINE = "refs/gitspace/lines/main"


def add_file(call_id: str, path: str, text: str) -> dict[str, Any]:
    """An apply_patch call that adds one file."""
    body = "".join(f"+{line}\n" for line in text.splitlines())
    return patch(call_id, f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch\n")


def calls_sent(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(i["type"], i["call_id"]) for i in body["input"] if "call_id" in i]


def three_patches(cx: Codex, fake: FakeResponses, root: Path) -> None:
    for n in (1, 2, 3):
        fake.reply(add_file(f"call_w{n}", f"f{n}.txt", f"{n}\n"))
    fake.reply(message("three written"))
    cx.run_ok(root, "write three files", args=("--trust",))


def continue_fork(cx: Codex, fake: FakeResponses, root: Path, new: str) -> None:
    def first(body: dict[str, Any]) -> None:
        assert calls_sent(body) == [("custom_tool_call", "call_w1"),
                                    ("custom_tool_call_output", "call_w1"),
                                    ("custom_tool_call", "call_w2"),
                                    ("custom_tool_call_output", "call_w2")], calls_sent(body)

    fake.reply(add_file("call_n1", "n.txt", "fork\n"), session=new, check=first)
    fake.reply(message("forked"), session=new)
    cx.run_ok(root, "go on differently", resume=new, args=("--trust",))


def test_a_codex_fork_in_a_workspace(codex: Codex, fake_responses: FakeResponses,
                                     tmp_path: Path) -> None:
    root = tmp_path / "ws"
    gitspace.init(root).close()
    codex.gitspace(root, "hooks", "install", "codex")
    three_patches(codex, fake_responses, root)
    recorded = [op for op in ops(root) if op.source == "harness"]
    assert [(op.tool, op.tool_use_id) for op in recorded] == [
        ("apply_patch", f"call_w{n}") for n in (1, 2, 3)]
    [original] = codex.transcripts()
    before = original.read_bytes()

    out = json.loads(codex.gitspace(root, "fork", recorded[1].op_id, "--json").stdout)
    new = out["session"]
    assert out["harness"] == "codex" and out["command"] == f"codex resume {new}"
    assert out["transcript"] == str(original.with_name(original.name.replace(
        str(recorded[1].session), new)))
    assert "f2.txt" in files(root) and "f3.txt" not in files(root)
    assert_clean(root)

    continue_fork(codex, fake_responses, root, new)
    fake_responses.done()
    assert original.read_bytes() == before
    mine = next(op for op in ops(root) if op.tool_use_id == "call_n1")
    assert (mine.session, mine.agent, mine.paths) == (new, "codex", ("n.txt",))
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == out["branch"]
    assert [op.tool_use_id for op in ops(root, "main") if op.source == "harness"] == [
        "call_w1", "call_w2", "call_w3"]
    assert_clean(root)


def test_a_codex_fork_in_your_own_checkout(codex: Codex, fake_responses: FakeResponses,
                                           tmp_path: Path) -> None:
    user = make_user_repo(tmp_path / "repo")
    codex.gitspace(user, "hooks", "install", "codex")
    three_patches(codex, fake_responses, user)
    second = next(op for op in ops(user, LINE) if op.tool_use_id == "call_w2")
    theirs = users_own(user)
    [original] = codex.transcripts()
    before = original.read_bytes()

    out = json.loads(codex.gitspace(user, "fork", second.op_id, "--json").stdout)
    new = out["session"]
    assert (user / "f2.txt").exists() and not (user / "f3.txt").exists()
    now = users_own(user)
    assert now.pop("files") == {k: v for k, v in theirs.pop("files").items() if k != "f3.txt"}
    now.pop("status"), theirs.pop("status")
    assert now == theirs, "HEAD, refs, the index and its stat, the stash and tags are as they were"

    continue_fork(codex, fake_responses, user, new)
    fake_responses.done()
    assert original.read_bytes() == before
    line = ops(user, LINE)
    assert [(op.tool, op.session) for op in line[-2:]] == [("fork", new), ("apply_patch", new)]
    assert (user / "n.txt").read_text() == "fork\n"
    fsck(user)
