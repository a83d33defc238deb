"""The split index: a large index is written, when asked for or past ``SPLIT_AT``, as a small delta
against a shared file that git reads exactly like its own (checked with git's own ls-files,
status, diff-index and fsck). tests/test_git_clients.py covers when it is written at all."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_clean, call_ok, git
from hypothesis import given
from hypothesis import strategies as st

import gitspace
from gitspace.storage import ewah, gitindex


@given(st.sets(st.integers(min_value=0, max_value=5000), max_size=200))
def test_ewah_round_trip(positions: set[int]) -> None:
    data = ewah.encode(sorted(positions))
    decoded, used = ewah.decode(data + b"trailing")
    assert decoded == sorted(positions) and used == len(data)


def test_ewah_compresses_runs_of_zero_words() -> None:
    assert len(ewah.encode([100_000])) == 12 + 8 * 2  # one run-length word, one literal
    assert ewah.encode([]) == bytes(4) + (1).to_bytes(4, "big") + bytes(8) + bytes(4)


def _index_matches_head(root: Path) -> None:
    staged = [(ln.split()[1], ln.split("\t")[1]) for ln in git(root, "ls-files", "-s").splitlines()]
    tree = [(ln.split()[2], ln.split("\t")[1]) for ln in git(root, "ls-tree", "-r", "HEAD").splitlines()]
    assert staged == tree
    assert git(root, "diff-index", "--cached", "HEAD") == ""
    assert_clean(root)


def _has_link(root: Path) -> bool:
    return b"link" in (root / ".git" / "index").read_bytes()[-2000:]


@pytest.fixture
def small_split(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gitindex, "SPLIT_AT", 40)
    monkeypatch.setattr(gitindex, "SPLIT_OPT_IN_AT", 40)
    monkeypatch.setattr(gitindex, "FOLD_AT", 6)


def _populate(root: Path, n: int) -> None:
    for i in range(n):
        path = root / f"d{i // 10}" / f"f{i}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{i}\n")


def test_ops_on_a_split_index_keep_git_exact(tmp_path: Path, small_split: None) -> None:
    root = tmp_path / "ws"
    _populate(root, 60)
    with gitspace.init(root, agent="splitter") as ws:
        assert _has_link(root) and list((root / ".git").glob("sharedindex.*"))
        for i in range(30):  # several folds (FOLD_AT=6), replacements, deletions, additions
            call_ok(ws, "append", {"path": f"d{i % 6}/f{i % 6 * 10}.txt", "text": f"{i}\n"})
            if i % 4 == 0:
                call_ok(ws, "create", {"path": f"new/n{i}.txt", "file_text": "n\n"})
            if i % 5 == 0:
                call_ok(ws, "delete", {"path": f"d{5 - i // 5}/f{(5 - i // 5) * 10 + 3}.txt"})
            _index_matches_head(root)
        call_ok(ws, "rename", {"old_path": "d1", "new_path": "moved"})
        call_ok(ws, "undo", {})
        call_ok(ws, "checkpoint", {"name": "cp"})
        call_ok(ws, "delete", {"path": "new"})
        call_ok(ws, "restore", {"name": "cp"})
        assert _has_link(root)
        _index_matches_head(root)
        assert len((root / ".git" / "index").read_bytes()) < 4000


def test_git_writes_in_between_are_read_back(tmp_path: Path, small_split: None) -> None:
    root = tmp_path / "ws"
    _populate(root, 60)
    with gitspace.init(root, agent="splitter") as ws:
        call_ok(ws, "append", {"path": "d0/f0.txt", "text": "ours\n"})
        (root / "d1" / "f10.txt").write_text("by hand\n")
        git(root, "add", "d1/f10.txt")  # git rewrites the split index its own way
        git(root, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "-m", "by hand")
        call_ok(ws, "append", {"path": "d1/f10.txt", "text": "ours again\n"})
        _index_matches_head(root)
        git(root, "update-index", "--no-split-index")  # and a plain one
        call_ok(ws, "append", {"path": "d2/f20.txt", "text": "after unsplit\n"})
        _index_matches_head(root)


def test_core_split_index_false_keeps_it_plain(tmp_path: Path, small_split: None) -> None:
    root = tmp_path / "ws"
    _populate(root, 60)
    gitspace.init(root).close()
    git(root, "config", "core.splitIndex", "false")
    git(root, "update-index", "--no-split-index")
    with gitspace.open(root, agent="plain") as ws:
        call_ok(ws, "append", {"path": "d0/f0.txt", "text": "x\n"})
        assert not _has_link(root)
        _index_matches_head(root)


def test_folding_prunes_only_old_unused_shared_files(tmp_path: Path, small_split: None) -> None:
    import os
    import time

    root = tmp_path / "ws"
    _populate(root, 60)
    with gitspace.init(root, agent="splitter") as ws:
        stale = root / ".git" / f"sharedindex.{'0' * 40}"
        recent = root / ".git" / f"sharedindex.{'1' * 40}"
        stale.write_bytes(b"old")
        recent.write_bytes(b"maybe still being read")
        two_hours_ago = time.time() - 7200
        os.utime(stale, (two_hours_ago, two_hours_ago))
        for i in range(10):  # more than FOLD_AT changed paths: at least one fold
            call_ok(ws, "append", {"path": f"d0/f{i}.txt", "text": f"{i}\n"})
        assert not stale.exists() and recent.exists()
        _index_matches_head(root)
