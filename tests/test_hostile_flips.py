"""A file becomes a folder (``fd`` -> ``fd/x``) and back, through every writer and the watcher.

What must hold after each flip: the index equals the tree (no index holding both ``fd`` and
``fd/x``: ``git write-tree`` works and ``git status`` is clean), and a restore or switch across
the flip records no phantom outside edit.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import call_ok, git, head, ops
from hostile import assert_sound, commit, fsck
from user_repo import checkout_state, make_user_repo, status

import gitspace
from gitspace.replay.engine import replay
from gitspace.team import attach, merge
from gitspace.team import remote as sync
from gitspace.team.watch import Watcher

pytestmark = pytest.mark.usefixtures("scratch_dirs")  # replay's folders: none left after

FILE = {"fd": "a file\n", "fd/x": None}
FOLDER = {"fd": None, "fd/x": "a file in a folder\n"}


def flip_on_disk(root: Path, to_folder: bool) -> None:
    """What a person's editor or shell does: replace the file by a folder, or the reverse."""
    fd = root / "fd"
    if to_folder:
        fd.unlink()
        fd.mkdir()
        (fd / "x").write_text("a file in a folder\n")
    else:
        shutil.rmtree(fd)
        fd.write_text("a file\n")


def no_external_ops_since(root: Path, count: int) -> None:
    later = ops(root)[count:]
    assert not [o for o in later if o.source == "external"], "a phantom outside edit was recorded"


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[gitspace.Workspace]:
    workspace = gitspace.init(tmp_path / "ws")  # a person: undo may take back outside edits
    try:
        yield workspace
    finally:
        workspace.close()


@pytest.mark.parametrize("to_folder", [True, False], ids=["file-to-folder", "folder-to-file"])
def test_snapshot_and_undo_of_a_flip_keep_the_index_equal_to_the_tree(
        ws: gitspace.Workspace, to_folder: bool) -> None:
    start = FILE if to_folder else FOLDER
    call_ok(ws, "create", {"path": next(p for p, t in start.items() if t), "file_text":
                           next(t for t in start.values() if t)})
    flip_on_disk(ws.root, to_folder)
    assert ws.snapshot().op is not None
    assert_sound(ws.root)
    count = len(ops(ws.root))
    call_ok(ws, "undo", {})  # reverts the outside edit: the flip back, in one op
    no_external_ops_since(ws.root, count)
    assert (ws.root / "fd").is_file() == to_folder
    assert_sound(ws.root)
    call_ok(ws, "redo", {})
    assert (ws.root / "fd").is_dir() == to_folder
    assert_sound(ws.root)


@pytest.mark.parametrize("to_folder", [True, False], ids=["file-to-folder", "folder-to-file"])
def test_restore_across_a_flip_records_no_phantom_op(ws: gitspace.Workspace,
                                                     to_folder: bool) -> None:
    first, then = (FILE, FOLDER) if to_folder else (FOLDER, FILE)
    git(ws.root, "branch", "then", commit(ws.root, head(ws.root), then))
    git(ws.root, "tag", "-a", "-m", "then", "gitspace/then", "then")
    call_ok(ws, "create", {"path": next(p for p, t in first.items() if t),
                           "file_text": next(t for t in first.values() if t)})
    count = len(ops(ws.root))
    result = call_ok(ws, "restore", {"name": "then"})
    assert result.external_op is None
    no_external_ops_since(ws.root, count)
    assert (ws.root / "fd").is_dir() == to_folder
    assert_sound(ws.root)


@pytest.mark.parametrize("to_folder", [True, False], ids=["file-to-folder", "folder-to-file"])
def test_switch_across_a_flip_and_back(ws: gitspace.Workspace, to_folder: bool) -> None:
    first, then = (FILE, FOLDER) if to_folder else (FOLDER, FILE)
    base = head(ws.root)
    git(ws.root, "branch", "first", commit(ws.root, base, first))
    git(ws.root, "branch", "then", commit(ws.root, base, then))
    call_ok(ws, "switch", {"name": "first"})
    count = len(ops(ws.root))
    for name in ("then", "first", "then"):
        call_ok(ws, "switch", {"name": name})
        assert_sound(ws.root)
    assert (ws.root / "fd").is_dir() == to_folder
    no_external_ops_since(ws.root, count)


@pytest.mark.parametrize("to_folder", [True, False], ids=["file-to-folder", "folder-to-file"])
def test_tools_flip_a_path_and_undo_both_ops_at_once(tmp_path: Path, to_folder: bool) -> None:
    first, then = (FILE, FOLDER) if to_folder else (FOLDER, FILE)
    old = next(p for p, t in first.items() if t)
    new = next(p for p, t in then.items() if t)
    with gitspace.init(tmp_path / "agent", agent="tester") as ws:
        call_ok(ws, "create", {"path": old, "file_text": "one\n"})
        call_ok(ws, "delete", {"path": old})
        call_ok(ws, "create", {"path": new, "file_text": "two\n"})
        assert_sound(ws.root)
        call_ok(ws, "undo", {"count": 2})
        assert (ws.root / old).read_text() == "one\n"
        assert_sound(ws.root)
        call_ok(ws, "redo", {})
        assert (ws.root / new).read_text() == "two\n"
        assert_sound(ws.root)


@pytest.mark.parametrize("to_folder", [True, False], ids=["file-to-folder", "folder-to-file"])
def test_pull_across_a_flip(tmp_path: Path, to_folder: bool) -> None:
    first, then = (FILE, FOLDER) if to_folder else (FOLDER, FILE)
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    with gitspace.init(tmp_path / "alice", agent="alice") as alice:
        a = commit(alice.root, head(alice.root), first)
        b = commit(alice.root, a, then)
        git(alice.root, "push", "-q", str(bare), f"{a}:refs/heads/main")
    git(tmp_path, "clone", "-q", str(bare), str(tmp_path / "bob"))
    git(tmp_path / "alice", "push", "-q", str(bare), f"{b}:refs/heads/main")
    with gitspace.open(tmp_path / "bob", agent="bob") as bob:
        count = len(ops(bob.root))
        sync.pull(bob, str(bare))
        assert head(bob.root) == b
        no_external_ops_since(bob.root, count)
    assert (tmp_path / "bob" / "fd").is_dir() == to_folder
    assert_sound(tmp_path / "bob")


@pytest.mark.parametrize("to_folder", [True, False], ids=["file-to-folder", "folder-to-file"])
def test_replay_across_a_flip(ws: gitspace.Workspace, to_folder: bool) -> None:
    first, then = (FILE, FOLDER) if to_folder else (FOLDER, FILE)
    base = head(ws.root)
    a = commit(ws.root, base, first)
    b = commit(ws.root, a, then)
    report = replay(ws, b, base, scripts=False)
    assert report.ok, report.divergence
    assert_sound(ws.root)


@pytest.mark.parametrize("to_folder", [True, False], ids=["file-to-folder", "folder-to-file"])
def test_merge_across_a_flip_into_the_users_checkout(tmp_path: Path, to_folder: bool) -> None:
    first, then = (FILE, FOLDER) if to_folder else (FOLDER, FILE)
    user = make_user_repo(tmp_path / "user")
    git(user, "stash", "-q", "-u")  # a checkout with nothing pending, so only the flip shows
    git(user, "update-ref", "refs/heads/main", commit(user, head(user), first))
    git(user, "reset", "-q", "--hard")
    a = attach.attach(user, "bob")
    git(user, "update-ref", "refs/heads/agent/bob", commit(user, head(user), then))
    git(a.path, "reset", "-q", "--hard")
    before, listed = checkout_state(user), status(user)
    merge.merge(user, "bob")
    assert (user / "fd").is_dir() == to_folder
    assert status(user) == listed
    assert checkout_state(user)["HEAD"] == before["HEAD"]
    git(user, "write-tree")
    fsck(user)


@pytest.mark.parametrize("to_folder", [True, False], ids=["file-to-folder", "folder-to-file"])
def test_the_watcher_records_a_flip_with_a_sound_index(ws: gitspace.Workspace,
                                                       to_folder: bool) -> None:
    start = FILE if to_folder else FOLDER
    call_ok(ws, "create", {"path": next(p for p, t in start.items() if t), "file_text":
                           next(t for t in start.values() if t)})
    count = len(ops(ws.root))
    with Watcher(ws.root, debounce=0.3, max_wait=2.0) as watcher:
        flip_on_disk(ws.root, to_folder)
        deadline = time.monotonic() + 30
        while len(ops(ws.root)) == count or not watcher.idle():
            assert time.monotonic() < deadline, "the watcher recorded nothing"
            time.sleep(0.05)
        watcher.flush()
    assert {o.source for o in ops(ws.root)[count:]} == {"external"}
    assert_sound(ws.root)


def test_an_outside_link_over_a_folder_recorded_before_an_op_keeps_the_index_exact(
        ws: gitspace.Workspace, tmp_path: Path) -> None:
    """Found by a race (a mutating script's run while ``box`` was swapped for a link): an op
    whose stage read ``box`` records the link as an outside edit first, which drops every file
    beneath the folder ``box`` from the tree; the op then makes ``box`` a folder again. The
    index kept the files neither named: index and HEAD disagreed for good (git status dirty)."""
    from gitspace.core.transaction import Outcome, Txn

    root = ws.root
    for name in ("a.txt", "b.txt"):
        call_ok(ws, "create", {"path": f"box/{name}", "file_text": f"{name}\n"})
    shutil.rmtree(root / "box")
    os.symlink(tmp_path, root / "box")  # another process's edit, not recorded yet

    def stage(txn: Txn) -> Outcome:  # what a mutating script's run recorded, in the race
        txn.read("box")
        txn.delete("box")
        txn.write("box/new.txt", b"written by the op\n")
        return Outcome("done", "box again")

    who = ws.identity("note")
    result = ws.transact(who.op({}), stage, who.author)
    assert result.ok and result.external_op is not None, result.text
    assert git(root, "ls-tree", "-r", "--name-only", "HEAD", "box") == "box/new.txt\n"
    assert git(root, "diff-index", "--cached", "HEAD") == "", "the index is not the tree"
    assert_sound(root)
