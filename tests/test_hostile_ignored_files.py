"""No op overwrites or commits an untracked or ignored file of the user's (docs/trust.md).

The issue's scene: a checkpoint holds a tracked ``.env`` template; later the file is deleted and
``.env`` ignored, and the user keeps real secrets in an ignored ``.env``. A restore (or a rewind,
an undo, a redo) of the template would commit the secret as an "external" op, then overwrite
it. It is refused instead, as git refuses a checkout over an untracked file: nothing committed,
nothing written, the secret in no object. An agent's own write over an ignored file is refused
too (committing what was there first would publish it), and a harness's call that wrote one is
not recorded. Every scenario ends sealed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import git, head, op_ids
from hostile import cli, gitspace_argv, never_blocks, objects_hold, sealed, workspace

import gitspace

SECRET = "API_KEY=the-users-real-secret"
SID = "5c0e4b1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b"


def _scene(ws: gitspace.Workspace) -> dict[str, str]:
    """cp (the template tracked), then .env deleted and ignored, then the user's secret there.
    The op ids of the deletion and of the .gitignore change, and the checkpoint's name."""
    assert ws.call("checkpoint", {"name": "cp"}).ok
    deleted = ws.call("delete", {"path": ".env"})
    assert deleted.ok, deleted.text
    ignored = ws.call("append", {"path": ".gitignore", "text": ".env\n"})
    assert ignored.ok, ignored.text
    (ws.root / ".env").write_text(SECRET + "\n")
    return {"delete": deleted.op or "", "ignore": ignored.op or ""}


def _refused_and_kept(ws: gitspace.Workspace, before: str, proc: Any) -> None:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "hint" in proc.stderr.lower(), proc.stderr
    assert ".env" in proc.stderr and "ignored" in proc.stderr, proc.stderr
    assert head(ws.root) == before, "an op was recorded"
    assert (ws.root / ".env").read_text() == SECRET + "\n", "the user's file was overwritten"
    assert not objects_hold(ws.root, SECRET), "the user's secret is in the object store"


@pytest.mark.parametrize("how", ["restore", "rewind to the checkpoint", "rewind to an op",
                                 "undo --op", "restore by the library"])
def test_a_tree_move_over_an_ignored_file_is_refused(tmp_path: Path, how: str) -> None:
    files = {"a.txt": "a\n", ".env": "API_KEY=changeme\n", ".gitignore": "build/\n"}
    with workspace(tmp_path, files) as (ws, outside):
        init = op_ids(ws.root)[0]
        made = _scene(ws)
        before = head(ws.root)
        with sealed(ws.root, outside):
            if how == "restore by the library":
                result = ws.call("restore", {"name": "cp"})
                assert not result.ok and "ignored" in result.text, result.text
                assert (ws.root / ".env").read_text() == SECRET + "\n"
                assert head(ws.root) == before and not objects_hold(ws.root, SECRET)
                return
            args = {"restore": ["call", "restore", "--args", '{"name": "cp"}'],
                    "rewind to the checkpoint": ["rewind", "cp"],
                    "rewind to an op": ["rewind", init],
                    "undo --op": ["undo", "--op", made["delete"]]}[how]
            _refused_and_kept(ws, before, cli(ws.root, *args))


def test_a_tree_move_over_an_untracked_file_is_refused(tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n", "notes.txt": "the template\n"}) as (ws, outside):
        assert ws.call("checkpoint", {"name": "cp"}).ok
        assert ws.call("delete", {"path": "notes.txt"}).ok
        (ws.root / "notes.txt").write_text("the user's own notes, never recorded\n")
        before = head(ws.root)
        with sealed(ws.root, outside):
            proc = cli(ws.root, "call", "restore", "--args", '{"name": "cp"}')
            assert proc.returncode == 1 and "untracked" in proc.stderr, proc.stderr
            assert head(ws.root) == before
            assert (ws.root / "notes.txt").read_text() == "the user's own notes, never recorded\n"
            assert not objects_hold(ws.root, "never recorded")


def test_a_restore_that_leaves_an_untracked_file_alone_still_runs(tmp_path: Path) -> None:
    """The refusal is about the paths the move writes, nothing wider."""
    with workspace(tmp_path, {"a.txt": "a\n", ".gitignore": "build/\n"}) as (ws, outside):
        assert ws.call("checkpoint", {"name": "cp"}).ok
        assert ws.call("create", {"path": "b.txt", "file_text": "b\n"}).ok
        (ws.root / "build").mkdir()
        (ws.root / "build" / "out.bin").write_text(SECRET)
        (ws.root / "scratch.txt").write_text("untracked\n")
        with sealed(ws.root, outside):
            assert ws.call("restore", {"name": "cp"}).ok
            assert ws.call("undo", {}).ok
        assert not objects_hold(ws.root, SECRET)


@pytest.mark.parametrize(("tool", "args"), [
    ("create", {"path": ".env", "file_text": "API_KEY=the-agents\n"}),
    ("append", {"path": ".env", "text": "MORE=1\n"}),
    ("str_replace", {"path": ".env", "old_str": "API_KEY", "new_str": "KEY"}),
    ("delete", {"path": ".env"}),
])
def test_an_agents_write_over_an_ignored_file_is_refused(tmp_path: Path, tool: str,
                                                         args: dict[str, Any]) -> None:
    with workspace(tmp_path, {"a.txt": "a\n", ".gitignore": ".env\n"}) as (ws, outside):
        (ws.root / ".env").write_text(SECRET + "\n")
        before = head(ws.root)
        with sealed(ws.root, outside):
            result = ws.call(tool, args)
            assert not result.ok and "ignored" in result.text, result.text
            assert head(ws.root) == before
            assert (ws.root / ".env").read_text() == SECRET + "\n"
            assert not objects_hold(ws.root, SECRET)


def test_a_harness_call_that_wrote_an_ignored_file_is_not_recorded(tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n", ".gitignore": ".env\n"}) as (ws, outside):
        (ws.root / ".env").write_text(SECRET + "\n")
        env = str(ws.root / ".env")
        edit = {"file_path": env, "old_string": "real", "new_string": "REAL"}

        def hook(event: str) -> str:
            body = {"session_id": SID, "cwd": str(ws.root), "hook_event_name": event,
                    "tool_name": "Edit", "tool_input": edit, "tool_use_id": "toolu_1"}
            proc = never_blocks(gitspace_argv(ws.root, "hook", "claude-code"), ws.root,
                                stdin=json.dumps(body).encode())
            assert proc.returncode == 0 and "unexpected" not in proc.stderr, proc.stderr
            return proc.stderr

        before = head(ws.root)
        with sealed(ws.root, outside):
            hook("PreToolUse")
            (ws.root / ".env").write_text(SECRET.replace("real", "REAL") + "\n")
            said = hook("PostToolUse")
            assert "ignored" in said, said
        assert head(ws.root) == before
        assert not objects_hold(ws.root, "the-users-REAL-secret")


def test_a_file_an_agent_makes_where_nothing_was_is_its_own(tmp_path: Path) -> None:
    """The refusal protects what stood there; a new file at an ignored path, by a tool or by a
    harness's call, is the agent's and is recorded like any other."""
    with workspace(tmp_path, {"a.txt": "a\n", ".gitignore": "build/\n"}) as (ws, outside):
        with sealed(ws.root, outside):
            assert ws.call("create", {"path": "build/by-tool.txt", "file_text": "tool\n"}).ok
            made = {"file_path": str(ws.root / "build" / "by-hook.txt"), "content": "hook\n"}
            for event in ("PreToolUse", "PostToolUse"):
                if event == "PostToolUse":
                    (ws.root / "build" / "by-hook.txt").write_text("hook\n")
                body = {"session_id": SID, "cwd": str(ws.root), "hook_event_name": event,
                        "tool_name": "Write", "tool_input": made, "tool_use_id": "toolu_2"}
                proc = never_blocks(gitspace_argv(ws.root, "hook", "claude-code"), ws.root,
                                    stdin=json.dumps(body).encode())
                assert proc.returncode == 0 and "ignored" not in proc.stderr, proc.stderr
        assert {"build/by-tool.txt", "build/by-hook.txt"} <= set(
            git(ws.root, "ls-tree", "-r", "--name-only", "HEAD").split())
