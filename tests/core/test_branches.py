"""Branches are plain git branches; switching changes only what differs and never loses work."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_clean, call_ok, files, git, head, ops, state

import gitspace
from gitspace.errors import BadArguments, Conflict, GitspaceError, NotFound


def current(ws: gitspace.Workspace) -> str:
    return git(ws.root, "symbolic-ref", "--short", "HEAD").strip()


def test_branch_from_a_checkpoint(ws: gitspace.Workspace) -> None:
    root = ws.root
    call_ok(ws, "create", {"path": "a.txt", "file_text": "1\n"})
    call_ok(ws, "checkpoint", {"name": "fork"})
    fork = head(root)
    call_ok(ws, "append", {"path": "a.txt", "text": "main only\n"})
    main_files, main_tip = files(root), head(root)
    result = call_ok(ws, "branch", {"name": "try-east", "from": "fork"})
    assert result.text == f"Branch try-east created at {fork[:12]} and checked out (1 file(s) changed)."
    assert current(ws) == "try-east" and head(root) == fork
    assert (root / "a.txt").read_text() == "1\n"
    assert_clean(root)
    op = call_ok(ws, "append", {"path": "a.txt", "text": "east\n"}).op
    assert ops(root, "try-east")[-1].op_id == op
    assert head(root, "main") == main_tip and op not in [o.op_id for o in ops(root, "main")]
    call_ok(ws, "switch", {"name": "main"})
    assert files(root) == main_files
    call_ok(ws, "switch", {"name": "try-east"})
    assert (root / "a.txt").read_text() == "1\neast\n"
    assert_clean(root)


def test_branch_without_switching(ws: gitspace.Workspace) -> None:
    before = state(ws.root)
    call_ok(ws, "branch", {"name": "later", "switch": False})
    assert state(ws.root) == before
    assert head(ws.root, "later") == head(ws.root)


def test_switch_back_and_forth_restores_the_right_files(ws: gitspace.Workspace) -> None:
    root = ws.root
    call_ok(ws, "create", {"path": "shared.txt", "file_text": "base\n"})
    call_ok(ws, "create", {"path": "gone/later.txt", "file_text": "on main\n"})
    call_ok(ws, "branch", {"name": "side"})
    call_ok(ws, "create", {"path": "shared.txt", "file_text": "side\n"})
    call_ok(ws, "create", {"path": "side/only.txt", "file_text": "side only\n"})
    call_ok(ws, "delete", {"path": "gone"})
    call_ok(ws, "create", {"path": "run.sh", "file_text": "#!/bin/sh\n"})
    side = files(root)
    (root / "notes.untracked").write_text("mine\n")
    for _ in range(3):
        result = call_ok(ws, "switch", {"name": "main"})
        assert result.text == "On branch main (4 file(s) changed)."
        assert {k: v for k, v in files(root).items() if k != "notes.untracked"} == {
            ".gitignore": files(root)[".gitignore"], "shared.txt": "base\n",
            "gone/later.txt": "on main\n"}
        assert not (root / "side").exists()
        assert_clean_but(root, "notes.untracked")
        call_ok(ws, "switch", {"name": "side"})
        assert files(root) == side | {"notes.untracked": "mine\n"}
        assert_clean_but(root, "notes.untracked")
    assert (root / "notes.untracked").read_text() == "mine\n"
    assert call_ok(ws, "switch", {"name": "side"}).text == "On branch side (0 file(s) changed)."


def assert_clean_but(root: Path, untracked: str) -> None:
    assert git(root, "status", "--porcelain", "--untracked-files=all") == f"?? {untracked}\n"
    assert git(root, "diff-index", "--cached", "HEAD") == ""


def test_switch_refuses_to_overwrite_an_outside_change(ws: gitspace.Workspace) -> None:
    root = ws.root
    call_ok(ws, "create", {"path": "a.txt", "file_text": "main\n"})
    call_ok(ws, "branch", {"name": "side"})
    call_ok(ws, "create", {"path": "a.txt", "file_text": "side\n"})
    call_ok(ws, "switch", {"name": "main"})
    (root / "a.txt").write_text("by hand\n")
    before = state(root)
    result = ws.call("switch", {"name": "side"})
    assert isinstance(result.error, Conflict)
    assert "would overwrite a.txt, which has changes not recorded yet" in result.text
    assert state(root) == before and current(ws) == "main"
    # An untracked file in the way of a file the target branch has is refused too.
    (root / "a.txt").write_text("main\n")
    call_ok(ws, "branch", {"name": "with-b", "switch": False})
    call_ok(ws, "create", {"path": "b.txt", "file_text": "tracked on main\n"})
    call_ok(ws, "switch", {"name": "with-b"})
    (root / "b.txt").write_text("untracked on with-b\n")
    result = ws.call("switch", {"name": "main"})
    assert isinstance(result.error, Conflict) and "b.txt" in result.text
    assert (root / "b.txt").read_text() == "untracked on with-b\n" and current(ws) == "with-b"
    # Once the file is out of the way the switch goes through.
    (root / "b.txt").unlink()
    call_ok(ws, "switch", {"name": "main"})
    assert_clean(root)


@pytest.mark.parametrize("name", ["", "-b", "a..b", "a b", "x.lock", "a//b", "a/", "/a", "HEAD",
                                  "a/.b", "a\nb", "a~", "a^", "a:b", "é"])
def test_bad_branch_names_are_refused(ws: gitspace.Workspace, name: str) -> None:
    result = ws.call("branch", {"name": name})
    assert not result.ok and isinstance(result.error, BadArguments)
    assert git(ws.root, "for-each-ref", "--format=%(refname)", "refs/heads") == "refs/heads/main\n"


def test_duplicate_and_unknown_branches(ws: gitspace.Workspace) -> None:
    call_ok(ws, "branch", {"name": "side", "switch": False})
    result = ws.call("branch", {"name": "side"})
    assert isinstance(result.error, GitspaceError) and "already exists" in result.text
    result = ws.call("branch", {"name": "x", "from": "no-such-checkpoint"})
    assert isinstance(result.error, NotFound)
    result = ws.call("switch", {"name": "nope"})
    assert isinstance(result.error, NotFound) and "Branches: main, side." in result.text
    assert current(ws) == "main"
    assert_clean(ws.root)


def test_ops_on_each_branch_stay_on_it_across_reopen(ws_root: Path) -> None:
    with gitspace.init(ws_root, agent="tester") as ws:
        call_ok(ws, "create", {"path": "a.txt", "file_text": "1\n"})
        call_ok(ws, "branch", {"name": "b1"})
        call_ok(ws, "append", {"path": "a.txt", "text": "b1\n"})
    with gitspace.open(ws_root, agent="tester") as ws:
        assert ws.branch() == "b1"
        call_ok(ws, "undo", {})
        assert (ws_root / "a.txt").read_text() == "1\n"
        call_ok(ws, "switch", {"name": "main"})
        refused = ws.call("redo", {})
        assert not refused.ok  # the undo lives on b1, not on main
    assert [o.tool for o in ops(ws_root, "b1")] == ["init", "create", "append", "undo"]
    assert [o.tool for o in ops(ws_root, "main")] == ["init", "create"]
    assert_clean(ws_root)
