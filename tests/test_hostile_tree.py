"""Hostile work trees and git directories: what an attacker (or an unlucky user) can put on disk.

Fifos and sockets where gitspace reads or writes, hard links to files outside, names with
newlines, case-only renames, a git directory whose ``gitspace`` folder is a link, a work tree
reached through a linked parent. Each scenario ends with the outside folder unchanged and, where
the workspace is usable, ``git fsck --strict`` and a clean ``git status``.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import call_ok, git, head, ops
from hostile import Outside, assert_sound, commit, fsck
from user_repo import make_user_repo

import gitspace
from gitspace.errors import GitspaceError
from gitspace.team import attach


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[gitspace.Workspace]:
    workspace = gitspace.init(tmp_path / "ws", agent="tester")
    try:
        yield workspace
    finally:
        workspace.close()


class Unblocker:
    """Opens a fifo for writing after ``after`` seconds, so that a reader gitspace should never
    have started is released and the test fails instead of hanging."""

    def __init__(self, fifo: Path, after: float = 10.0) -> None:
        self.fifo, self.after, self.used = fifo, after, False
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        if self.stop.wait(self.after):
            return
        self.used = True
        fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)

    def __enter__(self) -> Unblocker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        assert not self.used, "gitspace opened a fifo and waited for a writer"


def test_a_fifo_where_the_agent_edits_is_refused_without_blocking(ws: gitspace.Workspace) -> None:
    os.mkfifo(ws.root / "notes.txt")
    with Unblocker(ws.root / "notes.txt"):
        result = ws.call("append", {"path": "notes.txt", "text": "more\n"})
    assert not result.ok and result.error is not None
    assert "not a regular file" in result.text
    assert stat.S_ISFIFO(os.lstat(ws.root / "notes.txt").st_mode)
    (ws.root / "notes.txt").unlink()
    assert_sound(ws.root)


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_a_special_file_replacing_a_tracked_one_is_reported_not_read(ws: gitspace.Workspace,
                                                                     kind: str) -> None:
    call_ok(ws, "create", {"path": "data.txt", "file_text": "tracked\n"})
    (ws.root / "data.txt").unlink()
    server = None
    if kind == "fifo":
        os.mkfifo(ws.root / "data.txt")
    else:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(ws.root / "data.txt"))
    try:
        with Unblocker(ws.root / "data.txt") if kind == "fifo" else _nothing():
            result = ws.snapshot()
            assert result.ok and result.op is None
            assert "data.txt" in result.text and "not a regular file" in result.text
            edit = ws.call("str_replace", {"path": "data.txt", "old_str": "tracked",
                                           "new_str": "x"})
            assert not edit.ok and "not a regular file" in edit.text
            switched = ws.call("branch", {"name": "side"})
            assert switched.ok
    finally:
        if server is not None:
            server.close()
    (ws.root / "data.txt").unlink()
    ws.snapshot()
    assert_sound(ws.root)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_a_hard_link_to_an_outside_file_is_edited_by_name(ws: gitspace.Workspace,
                                                          outside: Outside) -> None:
    os.link(outside.path / "victim.txt", ws.root / "victim.txt")
    assert ws.snapshot().op is not None
    call_ok(ws, "str_replace", {"path": "victim.txt", "old_str": "outside", "new_str": "inside"})
    call_ok(ws, "undo", {})
    call_ok(ws, "delete", {"path": "victim.txt"})
    outside.unchanged()
    assert_sound(ws.root)


def test_names_with_newlines_and_tabs_through_switch_snapshot_and_restore(
        ws: gitspace.Workspace) -> None:
    root = ws.root
    odd = "line\nbreak.txt"
    git(root, "branch", "odd", commit(root, head(root), {odd: "x\n", "tab\there/y": "y\n"}))
    call_ok(ws, "checkpoint", {"name": "plain"})
    call_ok(ws, "switch", {"name": "odd"})
    assert (root / odd).read_text() == "x\n"
    assert_sound(root)
    (root / "by\nhand.txt").write_text("z\n")
    assert ws.snapshot().op is not None
    assert_sound(root)
    call_ok(ws, "restore", {"name": "plain"})
    assert not (root / odd).exists() and not (root / "by\nhand.txt").exists()
    assert_sound(root)


def test_case_only_renames_and_back(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "Notes/Todo.md", "file_text": "a\n"})
    call_ok(ws, "checkpoint", {"name": "upper"})
    call_ok(ws, "rename", {"old_path": "Notes/Todo.md", "new_path": "Notes/todo.md"})
    call_ok(ws, "rename", {"old_path": "Notes", "new_path": "notes"})
    assert sorted(os.listdir(ws.root / "notes")) == ["todo.md"]
    assert_sound(ws.root)
    call_ok(ws, "undo", {"count": 2})
    assert os.listdir(ws.root / "Notes") == ["Todo.md"]
    assert_sound(ws.root)
    call_ok(ws, "redo", {})
    call_ok(ws, "restore", {"name": "upper"})
    assert os.listdir(ws.root / "Notes") == ["Todo.md"] and not (ws.root / "notes").exists()
    assert_sound(ws.root)


def test_a_linked_gitspace_state_folder_is_refused(tmp_path: Path, outside: Outside) -> None:
    root = tmp_path / "ws"
    gitspace.init(root, agent="tester").close()
    state = root / ".git" / "gitspace"
    for name in os.listdir(state):
        (state / name).unlink()
    state.rmdir()
    os.symlink(outside.path, state)
    with pytest.raises(GitspaceError, match="not a folder") as caught:
        gitspace.open(root, agent="tester")
    assert caught.value.hint
    outside.unchanged()
    fsck(root)


def test_an_agents_worktree_is_never_made_through_a_link(tmp_path: Path,
                                                         outside: Outside) -> None:
    user = make_user_repo(tmp_path / "user")
    (user / ".git" / "gitspace").mkdir()
    os.symlink(outside.path, user / ".git" / "gitspace" / "worktrees")
    with pytest.raises(GitspaceError, match="not a folder"):
        attach.attach(user, "bob")
    outside.unchanged()
    assert git(user, "worktree", "list").count("\n") == 1
    fsck(user)


def test_a_work_tree_reached_through_a_linked_parent(tmp_path: Path, outside: Outside) -> None:
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "via")
    with gitspace.init(tmp_path / "via" / "ws", agent="tester") as ws:
        call_ok(ws, "create", {"path": "a/b.txt", "file_text": "b\n"})
        call_ok(ws, "rename", {"old_path": "a", "new_path": "c"})
        call_ok(ws, "undo", {})
        assert ws.snapshot().op is None
    assert (real / "ws" / "a" / "b.txt").read_text() == "b\n"
    assert set(os.listdir(tmp_path)) == {"neighbour", "outside", "real", "via"}
    outside.unchanged()
    assert_sound(real / "ws")
    assert [o.tool for o in ops(real / "ws")][-3:] == ["create", "rename", "undo"]


def test_a_symlink_loop_in_the_way_is_never_followed(ws: gitspace.Workspace) -> None:
    os.symlink("loop", ws.root / "loop")
    result = ws.call("create", {"path": "loop/x.txt", "file_text": "x\n"})
    assert not result.ok and result.error is not None
    assert os.readlink(ws.root / "loop") == "loop"
    assert ws.snapshot().op is not None  # the link itself is an outside edit like any other
    assert_sound(ws.root)
