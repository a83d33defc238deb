"""team/agent_worktrees.py: a delegated child's worktree holds what the child touched, exactly as
its branch has it, and is made whole only when a program reads the disk itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import call_ok, git

import gitspace
from gitspace.core.writer import COMMITTER, Change, RefMove
from gitspace.errors import ToolFailed
from gitspace.storage.gitrepo import GitRepo
from gitspace.team import agent_worktrees
from gitspace.team.agent_worktrees import LazyFiles

FILE = 0o100644


def on_disk(root: Path) -> list[str]:
    """Every file and folder below ``root`` but .git, as paths relative to it."""
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*dirs, *(n for n in names if n != ".git")]:  # (a linked worktree's file)
            found.append(Path(folder, name).relative_to(root).as_posix())
    return sorted(found)


@pytest.fixture
def child(ws: gitspace.Workspace, tmp_path: Path) -> LazyFiles:
    """A child's worktree of the workspace's branch, as delegate makes one, and its files."""
    for rel, text in {"top.txt": "top\n", "a/one.txt": "1\n", "a/deep/two.txt": "2\n",
                      "a/.gitignore": "*.log\n", "b/three.txt": "3\n"}.items():
        (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.root / rel).write_text(text)
    assert ws.snapshot().ok
    with ws.writer.locked():
        ws.writer.apply(Change("test: a child's branch", COMMITTER,
                               [RefMove("refs/heads/kid", None, ws.tip())]))
    target = tmp_path / "kid"
    agent_worktrees.make(ws.repo, target, "kid", whole=False)
    repo = GitRepo.open(target)
    return LazyFiles(repo, ws.files, ws.repo.gitdir)


def test_a_child_worktree_starts_with_nothing_on_disk(child: LazyFiles) -> None:
    assert on_disk(child.root) == []
    assert child.repo.read_ref("HEAD") == child.repo.read_ref("refs/heads/kid")


def test_reading_a_path_fills_every_folder_on_its_way_and_nothing_else(child: LazyFiles) -> None:
    assert child.read("a/deep/two.txt") == (b"2\n", FILE)
    # The root's, a/'s and a/deep/'s own files (the .gitignore files among them): never b/.
    assert on_disk(child.root) == [".gitignore", "a", "a/.gitignore", "a/deep", "a/deep/two.txt",
                                   "a/one.txt", "top.txt"]


def test_a_listing_shows_a_folders_files_and_subfolders_as_the_branch_has_them(
        child: LazyFiles) -> None:
    assert [name for name, _ in child.listing("") or []] == [".git", ".gitignore", "a", "b",
                                                            "top.txt"]
    assert [name for name, _ in child.listing("a") or []] == [".gitignore", "deep", "one.txt"]
    assert child.stat("b") is not None and child.stat("nowhere") is None


def test_what_is_on_disk_is_never_overwritten_and_a_folder_is_filled_once(
        child: LazyFiles) -> None:
    (child.root / "top.txt").write_text("someone's\n")  # before the child looked
    assert child.read("top.txt") == (b"someone's\n", FILE)
    (child.root / "a").mkdir()
    assert child.read("a/one.txt") == (b"1\n", FILE)
    (child.root / "a" / "one.txt").unlink()  # gone since: it stays gone
    assert child.read("a/one.txt") is None


def test_a_link_in_the_way_of_a_folder_is_never_followed(child: LazyFiles,
                                                          tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (child.root / "a").symlink_to(outside)
    with pytest.raises(ToolFailed):
        child.read("a/one.txt")
    assert list(outside.iterdir()) == []


def test_whole_checks_out_the_rest_and_keeps_what_is_on_disk(child: LazyFiles) -> None:
    assert child.read("top.txt") is not None
    (child.root / "top.txt").write_text("changed\n")
    assert child.whole() == child.root
    assert on_disk(child.root) == [".gitignore", "a", "a/.gitignore", "a/deep", "a/deep/two.txt",
                                   "a/one.txt", "b", "b/three.txt", "top.txt"]
    assert (child.root / "top.txt").read_text() == "changed\n"
    assert git(child.root, "status", "--porcelain").splitlines() == [" M top.txt"]


def test_a_folder_made_whole_alone(child: LazyFiles) -> None:
    child.whole("a")
    assert on_disk(child.root) == [".gitignore", "a", "a/.gitignore", "a/deep", "a/deep/two.txt",
                                   "a/one.txt", "top.txt"]


def test_a_reader_reads_the_parent_until_the_child_writes(child: LazyFiles,
                                                           ws: gitspace.Workspace) -> None:
    assert child.reader() == (ws.root, ws.repo.gitdir)
    assert on_disk(child.root) == [], "reading elsewhere copied something"
    child.put("new.txt", (b"mine\n", FILE))
    assert child.reader() == (child.root, None)
    assert "b/three.txt" in on_disk(child.root)


def test_a_childs_op_records_what_it_changed_and_nothing_it_never_touched(
        child: LazyFiles, ws: gitspace.Workspace) -> None:
    kid = gitspace.open(child.root, agent="kid", files=child)
    try:
        call_ok(kid, "str_replace", {"path": "a/one.txt", "old_str": "1", "new_str": "one"})
        call_ok(kid, "create", {"path": "b/four.txt", "file_text": "4\n"})
        tip = kid.tip()
    finally:
        kid.close()
    changed = git(ws.root, "diff", "--name-status", ws.tip(), tip).splitlines()
    assert changed == ["M\ta/one.txt", "A\tb/four.txt"]


def test_discard_removes_a_childs_worktree_and_gits_record(ws: gitspace.Workspace) -> None:
    with ws.writer.locked():
        ws.writer.apply(Change("test", COMMITTER, [RefMove("refs/heads/kid2", None, ws.tip())]))
    place = "gitspace/delegates/kid2"
    target = ws.repo.commondir / place
    target.parent.mkdir(parents=True)
    agent_worktrees.make(ws.repo, target, "kid2", whole=False)
    assert "kid2" in git(ws.root, "worktree", "list")
    agent_worktrees.discard(ws.repo, place)
    assert not target.exists() and "kid2" not in git(ws.root, "worktree", "list")
