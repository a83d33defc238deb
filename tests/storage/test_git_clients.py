"""Other git clients read what gitspace writes: libgit2 (through pygit2: GitKraken and many IDE
plugins are built on it) and dulwich open a 10,000-file workspace after ops, read its index and
its status, and walk its history, agreeing with git itself.

The 10,000-file workspace is built once per module (about ten seconds); the split-index cases
use a small threshold instead, so they stay fast.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import dulwich.porcelain
import pygit2
import pytest
from conftest import call_ok, git
from dulwich.repo import Repo as DulwichRepo

import gitspace
from gitspace.storage import gitindex

FILES = 10_000


def _populate(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / "src" / f"g{i // 1000:02d}" / f"d{i // 100 % 10}"
        if i % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i % 100:03d}.txt").write_text(f"file {i}\n")


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A 10,000-file workspace with edits, a delete, a rename, a checkpoint, an undo and one
    outside edit still pending (so status has something to report)."""
    with pytest.MonkeyPatch.context() as mp:
        home = tmp_path_factory.mktemp("clients-home")
        mp.setenv("HOME", str(home))
        mp.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        root = tmp_path_factory.mktemp("clients") / "ws"
        _populate(root, FILES)
        with gitspace.init(root, agent="tester") as ws:
            call_ok(ws, "create", {"path": "notes/new.md", "file_text": "new\n"})
            call_ok(ws, "str_replace", {"path": "src/g00/d0/f000.txt", "old_str": "file 0",
                                        "new_str": "first file"})
            call_ok(ws, "delete", {"path": "src/g09/d9/f099.txt"})
            call_ok(ws, "rename", {"old_path": "src/g05/d5/f050.txt", "new_path": "moved.txt"})
            call_ok(ws, "checkpoint", {"name": "before-undo"})
            call_ok(ws, "create", {"path": "notes/undone.md", "file_text": "x\n"})
            call_ok(ws, "undo", {})
        (root / "src" / "g01" / "d1" / "f001.txt").write_text("edited outside\n")
        (root / "untracked.txt").write_text("?\n")
        yield root


def _git_index(root: Path) -> dict[str, str]:
    out = git(root, "ls-files", "-s", "-z")
    return {rec.split("\t", 1)[1]: rec.split()[1] for rec in out.split("\0") if rec}


def _git_status(root: Path) -> dict[str, str]:
    out = git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    return {rec[3:]: rec[:2] for rec in out.split("\0") if rec}


def test_the_default_index_is_plain(big: Path) -> None:
    index = (big / ".git" / "index").read_bytes()
    assert b"link" not in index[-4096:] and not list((big / ".git").glob("sharedindex.*"))
    assert len(_git_index(big)) == FILES + 1  # .gitignore; +1 created, -1 deleted; a rename


def test_pygit2_reads_index_status_and_history(big: Path) -> None:
    repo = pygit2.Repository(str(big))
    index = repo.index
    index.read()
    assert {e.path: str(e.id) for e in index} == _git_index(big)
    status = repo.status()
    assert status == {
        "src/g01/d1/f001.txt": pygit2.enums.FileStatus.WT_MODIFIED,
        "untracked.txt": pygit2.enums.FileStatus.WT_NEW,
    }
    assert set(_git_status(big)) == set(status)
    walked = [str(c.id) for c in repo.walk(repo.head.target, pygit2.enums.SortMode.TOPOLOGICAL)]
    assert walked == git(big, "rev-list", "--topo-order", "HEAD").split()
    tree = repo.revparse_single("refs/tags/gitspace/before-undo").peel(pygit2.Commit).tree
    assert "moved.txt" in tree and "notes" in tree


def test_dulwich_reads_index_status_and_history(big: Path) -> None:
    with DulwichRepo(str(big)) as repo:
        index = repo.open_index()
        paths = {os.fsdecode(p): index[p].sha.decode() for p in index}
        assert paths == _git_index(big)
        status = dulwich.porcelain.status(repo, untracked_files="all")
        assert status.staged == {"add": [], "delete": [], "modify": []}
        assert [os.fsdecode(p) for p in status.unstaged] == ["src/g01/d1/f001.txt"]
        assert [os.fsdecode(p) if isinstance(p, bytes) else p for p in status.untracked] == [
            "untracked.txt"]
        walked = [e.commit.id.decode() for e in repo.get_walker()]
        assert walked == git(big, "rev-list", "HEAD").split()


@pytest.fixture
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gitindex, "SPLIT_OPT_IN_AT", 30)
    monkeypatch.setattr(gitindex, "SPLIT_AT", 60)


def _is_split(root: Path) -> bool:
    return b"link" in (root / ".git" / "index").read_bytes()[-2000:]


def test_split_index_is_opt_in_and_announced_once(tmp_path: Path, small_thresholds: None) -> None:
    root = tmp_path / "ws"
    _populate(root, 40)  # over the opt-in size, under the automatic one
    with gitspace.init(root, agent="a") as ws:
        first = call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
        assert not _is_split(root) and first.notes == []
    git(root, "config", "core.splitIndex", "true")
    with gitspace.open(root, agent="a") as ws:
        started = call_ok(ws, "create", {"path": "b.txt", "file_text": "b\n"})
        assert _is_split(root)
        assert len(started.notes) == 1 and "core.splitIndex false" in started.notes[0]
        assert call_ok(ws, "create", {"path": "c.txt", "file_text": "c\n"}).notes == []
    git(root, "config", "core.splitIndex", "false")
    with gitspace.open(root, agent="a") as ws:
        call_ok(ws, "create", {"path": "d.txt", "file_text": "d\n"})
    assert not _is_split(root)
    pygit2.Repository(str(root)).index.read()  # readable again by libgit2


def test_a_huge_index_splits_by_itself_and_says_so(tmp_path: Path, small_thresholds: None) -> None:
    root = tmp_path / "ws"
    _populate(root, 57)  # + .gitignore
    with gitspace.init(root, agent="a") as ws:
        quiet = call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})  # 59 entries
        assert not _is_split(root) and quiet.notes == []
        loud = call_ok(ws, "create", {"path": "b.txt", "file_text": "b\n"})  # 60: splits
        assert _is_split(root) and len(loud.notes) == 1 and "60 entries" in loud.notes[0]
        assert call_ok(ws, "create", {"path": "c.txt", "file_text": "c\n"}).notes == []
    assert _git_status(root) == {}


def test_a_legacy_split_index_becomes_plain_again(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _populate(root, 40)
    gitspace.init(root, agent="a").close()
    git(root, "update-index", "--split-index")  # what gitspace wrote at 5,000 entries before
    assert _is_split(root)
    with pytest.raises(pygit2.GitError, match="link"):
        pygit2.Repository(str(root)).index.read()
    with gitspace.open(root, agent="a") as ws:
        call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    assert not _is_split(root) and _git_status(root) == {}
    assert len(pygit2.Repository(str(root)).index) == 42  # 40, .gitignore, a.txt
