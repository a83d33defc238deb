"""storage/objects.py: the objects an op writes before the writer moves anything.

Blobs, trees, commits and tags are written as git writes them (``git fsck --strict`` agrees, and
``git cat-file`` reads back what was written); ``update_tree`` changes only the paths it names,
nested folders made and emptied ones dropped. A write that fails leaves no temporary file, and
an object written twice is the same object.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from conftest import git, git_run

from gitspace import faults
from gitspace.storage.gitrepo import GitRepo
from gitspace.storage.objects import EXEC_MODE, FILE_MODE, Entry, Signature

WHO = Signature("Zoë", "zoe@example.com")


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo.init(tmp_path / "repo", "main")


def test_what_is_written_is_what_git_reads(repo: GitRepo) -> None:
    blob = repo.write_blob(b"hello\n")
    assert blob == git(repo.root, "hash-object", "--stdin", input=b"hello\n").strip()
    tree = repo.update_tree(None, {"a/b/c.txt": Entry(FILE_MODE, blob),
                                   "run.sh": Entry(EXEC_MODE, blob)})
    assert git(repo.root, "ls-tree", "-r", tree).split("\n")[:2] == [
        f"100644 blob {blob}\ta/b/c.txt", f"100755 blob {blob}\trun.sh"]
    commit = repo.write_commit(tree, [], "first\n", WHO, WHO)
    assert git(repo.root, "log", "-1", "--format=%an <%ae>%n%B", commit) == (
        "Zoë <zoe@example.com>\nfirst\n\n")
    tag = repo.write_tag("gitspace/cp", commit, "a checkpoint\n", WHO)
    assert git(repo.root, "cat-file", "-t", tag).strip() == "tag"
    assert repo.write_blob(b"hello\n") == blob  # the same object, not a second one
    git(repo.root, "update-ref", "refs/tags/gitspace/cp", tag)
    fsck = git_run(repo.root, "fsck", "--strict", "--no-progress")
    assert fsck.returncode == 0, fsck.stderr.decode()


def test_update_tree_changes_only_the_paths_it_names(repo: GitRepo) -> None:
    one, two = repo.write_blob(b"1\n"), repo.write_blob(b"2\n")
    tree = repo.update_tree(None, {"keep.txt": Entry(FILE_MODE, one),
                                   "d/e/gone.txt": Entry(FILE_MODE, one)})
    changed = repo.update_tree(tree, {"d/e/gone.txt": None, "keep.txt": Entry(FILE_MODE, two),
                                      "new/x.txt": Entry(FILE_MODE, one)})
    assert git(repo.root, "ls-tree", "-r", "--name-only", changed).split() == [
        "keep.txt", "new/x.txt"]  # d/ and d/e/ are empty: gone with their file
    assert repo.entry_at(changed, "keep.txt") == Entry(FILE_MODE, two)
    assert repo.update_tree(changed, {}) == changed


def test_a_failed_write_leaves_no_temporary_file(repo: GitRepo) -> None:
    objects = repo.root / ".git" / "objects"
    before = sorted(p.relative_to(objects) for p in objects.rglob("*"))
    with faults.inject("object.write", errno.ENOSPC), pytest.raises(OSError):
        repo.write_blob(b"never stored\n")
    assert sorted(p.relative_to(objects) for p in objects.rglob("*") if p.is_file()) == [
        p for p in before if (objects / p).is_file()]
    assert not [n for _, _, names in os.walk(objects) for n in names if n.startswith("tmp")]
    assert not repo.has_object(git(repo.root, "hash-object", "--stdin",
                                   input=b"never stored\n").strip())
