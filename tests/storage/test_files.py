"""storage/files.py: the one writer of work-tree files, on its own.

Every case checks the rule of its docstring: nothing written through a link, nothing removed
that the caller did not plan to replace, and a failed write changes nothing (no temporary file,
no folder it made).
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import time
from pathlib import Path

import pytest
from hostile import Outside

from gitspace import faults
from gitspace.errors import FileRefused, PathRefused
from gitspace.storage.files import (
    EXEC_MODE,
    FILE_MODE,
    LINK_MODE,
    TMP_NAME,
    Files,
    InTheWay,
    order,
    parts_of,
)


@pytest.fixture
def tree(tmp_path: Path) -> Files:
    root = tmp_path / "wt"
    root.mkdir()
    return Files(root)


def listing(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (links not followed) as kind and content."""
    out = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            p = Path(folder, name)
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif p.is_file():
                out[rel] = p.read_text(errors="replace")
            else:
                out[rel] = "special"
    return out


def no_tmp_files(root: Path) -> None:
    assert not [n for _, _, names in os.walk(root) for n in names if TMP_NAME.fullmatch(n)]


def test_writes_files_links_and_modes_making_folders(tree: Files) -> None:
    root = tree.root
    st = tree.put("a/b/c.txt", (b"hello\n", FILE_MODE))
    assert st is not None and stat.S_ISREG(st.st_mode) and st.st_size == 6
    tree.put("run.sh", (b"#!/bin/sh\n", EXEC_MODE))
    tree.put("a/link", (b"b/c.txt", LINK_MODE))
    assert (root / "a" / "b" / "c.txt").read_text() == "hello\n"
    assert stat.S_IMODE(os.lstat(root / "a" / "b" / "c.txt").st_mode) == 0o644
    assert stat.S_IMODE(os.lstat(root / "run.sh").st_mode) == 0o755
    assert os.readlink(root / "a" / "link") == "b/c.txt"
    assert tree.read("a/b/c.txt") == (b"hello\n", FILE_MODE)
    assert tree.read("run.sh") == (b"#!/bin/sh\n", EXEC_MODE)
    assert tree.read("a/link") == (b"b/c.txt", LINK_MODE)
    assert tree.read("a") is None and tree.read("missing/x") is None
    no_tmp_files(root)


def test_never_writes_through_a_link_where_a_folder_is_needed(tree: Files,
                                                              outside: Outside) -> None:
    os.symlink(outside.path, tree.root / "lnk")
    before = listing(tree.root)
    for rel in ("lnk/new.txt", "lnk/victim.txt", "lnk/sub/deep.txt", "lnk/made/x"):
        with pytest.raises(InTheWay, match="symbolic link"):
            tree.put(rel, (b"pwned\n", FILE_MODE))
        with pytest.raises(InTheWay):
            tree.put(rel, (b"/etc/passwd", LINK_MODE))
        tree.put(rel, None)  # beneath a link there is nothing of ours to delete
    assert listing(tree.root) == before
    outside.unchanged()


def test_a_planned_deletion_clears_the_way_first(tree: Files, outside: Outside) -> None:
    os.symlink(outside.path, tree.root / "lnk")
    (tree.root / "fd").write_text("a file\n")
    changes = {"lnk/file": (b"in a real folder\n", FILE_MODE), "lnk": None,
               "fd/x": (b"x\n", FILE_MODE), "fd": None}
    assert order(changes) == ["fd", "lnk", "fd/x", "lnk/file"]
    written = {rel: tree.put(rel, changes[rel]) for rel in order(changes)}
    assert {rel for rel, st in written.items() if st is not None} == {"fd/x", "lnk/file"}
    assert listing(tree.root) == {"lnk": "dir", "lnk/file": "in a real folder\n", "fd": "dir",
                                  "fd/x": "x\n"}
    outside.unchanged()
    # and back: the folder's file goes first, then the file takes the folder's place
    back = {"fd/x": None, "fd": (b"a file again\n", FILE_MODE)}
    for rel in order(back):
        tree.put(rel, back[rel])
    assert listing(tree.root)["fd"] == "a file again\n"


def test_a_file_where_a_folder_is_needed_is_never_removed(tree: Files) -> None:
    (tree.root / "fd").write_text("the user's\n")
    with pytest.raises(InTheWay, match="A parent of fd/x is a file"):
        tree.put("fd/x", (b"x\n", FILE_MODE))
    assert (tree.root / "fd").read_text() == "the user's\n"
    no_tmp_files(tree.root)


def test_folders_where_a_file_goes(tree: Files) -> None:
    (tree.root / "full").mkdir()
    (tree.root / "full" / "keep.txt").write_text("keep\n")
    with pytest.raises(InTheWay, match="full is a folder"):
        tree.put("full", (b"x\n", FILE_MODE))
    assert (tree.root / "full" / "keep.txt").read_text() == "keep\n"
    (tree.root / "empty" / "deeper").mkdir(parents=True)
    with pytest.raises(InTheWay):
        tree.put("empty", (b"x\n", FILE_MODE))  # not empty: it holds a folder
    (tree.root / "empty" / "deeper").rmdir()
    tree.put("empty", (b"x\n", FILE_MODE))  # an empty folder holds nothing to lose
    assert (tree.root / "empty").read_text() == "x\n"
    no_tmp_files(tree.root)


def test_a_link_at_the_path_itself_is_replaced_not_followed(tree: Files,
                                                            outside: Outside) -> None:
    os.symlink(outside.path / "victim.txt", tree.root / "a.txt")
    tree.put("a.txt", (b"mine\n", FILE_MODE))
    assert not (tree.root / "a.txt").is_symlink()
    assert (tree.root / "a.txt").read_text() == "mine\n"
    os.symlink(outside.path / "victim.txt", tree.root / "b.txt")
    tree.put("b.txt", None)
    assert not os.path.lexists(tree.root / "b.txt")
    outside.unchanged()


def test_a_hard_link_to_an_outside_file_is_replaced_by_name(tree: Files,
                                                            outside: Outside) -> None:
    os.link(outside.path / "victim.txt", tree.root / "linked.txt")
    tree.put("linked.txt", (b"rewritten\n", FILE_MODE))
    assert (tree.root / "linked.txt").read_text() == "rewritten\n"
    outside.unchanged()
    assert os.lstat(outside.path / "victim.txt").st_nlink == 1


def test_fifos_and_sockets_are_refused_never_opened_to_block(tree: Files) -> None:
    os.mkfifo(tree.root / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tree.root / "sock"))
    try:
        started = time.monotonic()
        for rel in ("pipe", "sock"):
            with pytest.raises(FileRefused, match="not a regular file"):
                tree.read(rel)
            with pytest.raises(InTheWay):
                tree.put(rel, (b"x\n", FILE_MODE))
            with pytest.raises(InTheWay):
                tree.put(rel, None)
            with pytest.raises(InTheWay, match=f"A parent of {rel}/x is a"):
                tree.put(f"{rel}/x", (b"x\n", FILE_MODE))
        assert time.monotonic() - started < 5  # nothing waited for a writer on the fifo
        assert stat.S_ISFIFO(os.lstat(tree.root / "pipe").st_mode)
        assert stat.S_ISSOCK(os.lstat(tree.root / "sock").st_mode)
    finally:
        server.close()


def test_reads_beneath_a_link_or_a_file_find_nothing(tree: Files, outside: Outside) -> None:
    os.symlink(outside.path, tree.root / "lnk")
    (tree.root / "f").write_text("f\n")
    assert tree.read("lnk/victim.txt") is None
    assert tree.stat("lnk/victim.txt") is None
    assert tree.read("f/x") is None
    assert tree.read("lnk") == (os.fsencode(outside.path), LINK_MODE)
    st = tree.stat("lnk")
    assert st is not None and stat.S_ISLNK(st.st_mode)


def test_the_size_cap_is_checked_before_reading(tree: Files) -> None:
    (tree.root / "big").write_bytes(b"x" * 101)
    stats: dict[str, os.stat_result] = {}
    with pytest.raises(FileRefused, match="101 bytes, over the 100-byte cap"):
        tree.read("big", limit=100, stats=stats)
    assert stats["big"].st_size == 101
    assert tree.read("big", limit=101) == (b"x" * 101, FILE_MODE)


def test_deleting_prunes_the_folders_it_empties_up_to_the_root(tree: Files) -> None:
    tree.put("a/b/c/d.txt", (b"d\n", FILE_MODE))
    tree.put("a/keep.txt", (b"k\n", FILE_MODE))
    tree.put("a/b/c/d.txt", None)
    assert listing(tree.root) == {"a": "dir", "a/keep.txt": "k\n"}
    tree.put("a/keep.txt", None)
    assert listing(tree.root) == {} and tree.root.is_dir()


@pytest.mark.parametrize("rel", ["..", "../x", "a/../../x", "/abs", "a//b", "./a", ".git",
                                 ".git/config", "x/.GIT/hooks/pre-commit", ".git. /hooks/x",
                                 ".Git ", "a/\0"])
def test_paths_that_leave_the_tree_or_enter_git_are_refused(tree: Files, rel: str) -> None:
    with pytest.raises(PathRefused, match="refused the path"):
        parts_of(rel)
    with pytest.raises(PathRefused):
        tree.put(rel, (b"x", FILE_MODE))
    with pytest.raises(PathRefused):
        tree.read(rel)
    assert listing(tree.root) == {}


@pytest.mark.parametrize("point", ["file.write", "file.chmod", "file.fsync", "file.replace"])
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES, errno.EIO, errno.EINTR])
def test_a_failed_write_changes_nothing(tmp_path: Path, point: str, code: int) -> None:
    root = tmp_path / "wt"
    (root / "old").mkdir(parents=True)
    (root / "old" / "a.txt").write_text("before\n")
    tree = Files(root, durable=True)
    before = listing(root)
    for rel in ("old/a.txt", "new/deeper/b.txt"):
        with faults.inject(point, code) as armed, pytest.raises(OSError) as caught:
            tree.put(rel, (b"after\n", FILE_MODE))
        assert caught.value.errno == code and armed.fired == 1
        assert listing(root) == before
    with faults.inject("file.write", code), pytest.raises(OSError):
        tree.put("new/link", (b"target", LINK_MODE))
    assert listing(root) == before
    tree.put("old/a.txt", (b"after\n", FILE_MODE))  # and nothing stays armed
    assert (root / "old" / "a.txt").read_text() == "after\n"


def test_a_folder_put_at_the_path_mid_write_is_in_the_way(tmp_path: Path) -> None:
    """Another process makes a folder where the file goes between gitspace's look and its
    rename (the rename then fails with EISDIR, as the injected fault does): an expected error,
    the folder untouched, no temporary file left. A race found it escaping ws.call."""
    root = tmp_path / "wt"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a.txt").write_text("before\n")
    tree = Files(root)
    before = listing(root)
    with faults.inject("file.replace", errno.EISDIR), pytest.raises(InTheWay, match="folder"):
        tree.put("d/a.txt", (b"after\n", FILE_MODE))
    assert listing(root) == before


def test_temporary_files_a_crash_left_are_removed(tree: Files) -> None:
    tree.put("d/a.txt", (b"a\n", FILE_MODE))
    (tree.root / "d" / ".gitspace-abcd1234").write_text("half\n")
    (tree.root / ".gitspace-zzzz_999").write_text("half\n")
    (tree.root / "d" / ".gitspace-keep").write_text("not ours\n")
    tree.remove_tmp_files(["d/a.txt", "top.txt", "missing/x"])
    assert sorted(listing(tree.root)) == ["d", "d/.gitspace-keep", "d/a.txt"]
