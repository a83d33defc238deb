"""core/writer.py: one Change, applied whole or not at all, for every shape a change takes.

The shapes beyond an op's (branch, files and index together): a ref alone (outside refs/heads
too), files alone (no index, no HEAD), several refs in one ref transaction, a new branch checked
out with it. Each is checked applied, failed (nothing moved), and cut short by a crash (a copy of
the workspace taken at that instant finishes it when opened). A journal that no change of
gitspace's wrote (malformed, or naming paths and refs outside the repository) is refused and
acted on never.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import call_ok, git

import gitspace
from gitspace import faults
from gitspace.core.writer import COMMITTER, Change, RefMove
from gitspace.errors import ConcurrentUpdate, WriteFailed
from gitspace.storage.objects import FILE_MODE
from gitspace.storage.statefiles import StateRefused

PRIVATE = "refs/gitspace/private/main"


@pytest.fixture
def two(ws: gitspace.Workspace) -> tuple[str, str]:
    """Two ops on main: (the first's commit, the tip)."""
    first = call_ok(ws, "create", {"path": "a.txt", "file_text": "one\n"}).commit
    call_ok(ws, "create", {"path": "a.txt", "file_text": "two\n"})
    assert first is not None
    return first, ws.tip()


def _index(ws: gitspace.Workspace) -> bytes:
    return (ws.repo.gitdir / "index").read_bytes()


def _apply(ws: gitspace.Workspace, change: Change) -> list[str]:
    with ws.writer.locked():
        return ws.writer.apply(change)


def test_a_ref_alone_outside_refs_heads(ws: gitspace.Workspace, two: tuple[str, str]) -> None:
    first, tip = two
    index, head = _index(ws), (ws.repo.gitdir / "HEAD").read_text()
    _apply(ws, Change("gitspace: private line", COMMITTER, [RefMove(PRIVATE, None, first)]))
    assert ws.repo.read_ref(PRIVATE) == first
    _apply(ws, Change("gitspace: private line", COMMITTER, [RefMove(PRIVATE, first, tip)]))
    assert ws.repo.read_ref(PRIVATE) == tip
    assert _index(ws) == index and (ws.repo.gitdir / "HEAD").read_text() == head
    assert (ws.root / "a.txt").read_text() == "two\n"
    assert not ws.writer.journal.exists()


def test_files_alone_never_touch_the_index_or_head(ws: gitspace.Workspace,
                                                   two: tuple[str, str]) -> None:
    """Files written as the first op left them, journaled (a crash finishes them), with the
    index, HEAD and every ref as they were."""
    first, tip = two
    index, refs = _index(ws), git(ws.root, "for-each-ref")
    written = _apply(ws, Change("gitspace: rewind in place", COMMITTER, at=first,
                                files={"a.txt": (b"one\n", FILE_MODE)},
                                before={"a.txt": (b"two\n", FILE_MODE)}, index=False))
    assert written == ["a.txt"]
    assert (ws.root / "a.txt").read_text() == "one\n"
    assert _index(ws) == index and git(ws.root, "for-each-ref") == refs and ws.tip() == tip
    assert git(ws.root, "status", "--porcelain") == " M a.txt\n"


def test_several_refs_move_together_or_not_at_all(ws: gitspace.Workspace,
                                                  two: tuple[str, str]) -> None:
    first, tip = two
    moves = [RefMove("refs/tags/gitspace/x", None, tip), RefMove(PRIVATE, None, first)]
    _apply(ws, Change("gitspace: both", COMMITTER, moves))
    assert ws.repo.read_ref(PRIVATE) == first and ws.repo.read_ref("refs/tags/gitspace/x") == tip
    refs = git(ws.root, "for-each-ref")
    stale = [RefMove("refs/tags/gitspace/y", None, tip), RefMove(PRIVATE, tip, first)]  # not at tip
    with pytest.raises(ConcurrentUpdate):
        _apply(ws, Change("gitspace: both", COMMITTER, stale))
    assert git(ws.root, "for-each-ref") == refs
    assert not ws.writer.journal.exists()


def test_a_failed_write_moves_every_ref_back(ws: gitspace.Workspace, two: tuple[str, str]) -> None:
    """Branch, a tag and a private ref in one change whose second file fails: nothing moved."""
    first, tip = two
    call_ok(ws, "create", {"path": "b.txt", "file_text": "bee\n"})
    new = ws.tip()
    git(ws.root, "update-ref", "refs/heads/main", tip)  # the branch back at tip, files at new
    git(ws.root, "checkout", "-f", "main")
    before = {"refs": git(ws.root, "for-each-ref"), "index": _index(ws),
              "files": sorted(p.name for p in ws.root.iterdir())}
    change = Change("gitspace: all", COMMITTER,
                    [RefMove("refs/heads/main", tip, new), RefMove(PRIVATE, None, first)], at=new,
                    files={"b.txt": (b"bee\n", FILE_MODE), "c/d.txt": (b"d\n", FILE_MODE)},
                    before={"b.txt": None, "c/d.txt": None})
    with faults.inject("file.write", errno.EIO, after=1), pytest.raises(WriteFailed):
        _apply(ws, change)
    assert {"refs": git(ws.root, "for-each-ref"), "index": _index(ws),
            "files": sorted(p.name for p in ws.root.iterdir())} == before
    assert not ws.writer.journal.exists()


def _cut_short(ws: gitspace.Workspace, copy: Path, point: str, change: Change) -> None:
    """Apply ``change``, copying the workspace to ``copy`` at ``point`` (the crash's instant)."""
    with faults.inject(point, lambda: shutil.copytree(ws.root, copy, symlinks=True)):
        _apply(ws, change)


CUTS: dict[str, tuple[str, Callable[[str, str], Change]]] = {
    "a ref alone": ("ref.update", lambda first, tip: Change(
        "gitspace: private line", COMMITTER, [RefMove(PRIVATE, None, first)])),
    "files alone": ("file.replace", lambda first, tip: Change(
        "gitspace: rewind in place", COMMITTER, at=first, files={"a.txt": (b"one\n", FILE_MODE)},
        before={"a.txt": (b"two\n", FILE_MODE)}, index=False)),
}


@pytest.mark.parametrize("name", sorted(CUTS))
def test_a_change_cut_short_is_finished_by_the_next_open(ws: gitspace.Workspace,
                                                         two: tuple[str, str], tmp_path: Path,
                                                         name: str) -> None:
    first, tip = two
    point, make = CUTS[name]
    change = make(first, tip)
    crashed = tmp_path / "crashed"
    _cut_short(ws, crashed, point, change)
    assert (crashed / ".git" / "gitspace" / "journal.json").exists()
    index = (crashed / ".git" / "index").read_bytes()
    with gitspace.open(crashed, agent="tester") as again:
        assert not again.writer.journal.exists()
        assert again.repo.read_ref("refs/heads/main") == tip
        if change.refs:
            assert again.repo.read_ref(PRIVATE) == first
    if change.at is not None:
        assert (crashed / "a.txt").read_text() == "one\n"
    if not change.index:
        assert (crashed / ".git" / "index").read_bytes() == index



def test_a_new_branch_and_head_move_together_or_not_at_all(ws: gitspace.Workspace,
                                                           two: tuple[str, str]) -> None:
    """A branch made at the first op and checked out, in one change: a failure of its file
    moves HEAD back and deletes the branch; a crash after HEAD moved is finished on open."""
    first, tip = two
    change = Change("gitspace: branch", COMMITTER, [RefMove("refs/heads/try", None, first)],
                    head="try", at=first, files={"a.txt": (b"one\n", FILE_MODE)},
                    before={"a.txt": (b"two\n", FILE_MODE)})
    refs, index = git(ws.root, "for-each-ref"), _index(ws)
    with faults.inject("file.write", errno.EIO), pytest.raises(WriteFailed):
        _apply(ws, change)
    assert git(ws.root, "for-each-ref") == refs and _index(ws) == index
    assert ws.repo.head_branch() == "main" and (ws.root / "a.txt").read_text() == "two\n"
    _cut_short(ws, ws.root.parent / "crashed", "file.replace", change)
    with gitspace.open(ws.root.parent / "crashed", agent="tester") as again:
        assert again.repo.head_branch() == "try" and again.tip() == first
        assert (again.root / "a.txt").read_text() == "one\n"
        assert git(again.root, "status", "--porcelain") == ""


HOSTILE = {
    "a list": b"[]",
    "a ref outside refs/": b'{"moves": [["../../../victim", null, null]], "paths": []}',
    "a lock outside the repository": b'{"ref": null, "locks": ["refs/../../x"], "paths": []}',
    "a ref git refuses": b'{"moves": [["refs/heads/a.lock/b", null, null]], "paths": []}',
    "a path into .git": b'{"moves": [], "at": null, "paths": [".git/config"]}',
    "an object id that is none": b'{"moves": [["refs/heads/main", "HEAD~1", null]]}',
    "a head that is no branch": b'{"moves": [], "head": "../HEAD", "paths": []}',
    "an index path": b'{"moves": [], "index": "/tmp/elsewhere", "paths": []}',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_journal_no_change_wrote_is_refused_and_acted_on_never(
        ws: gitspace.Workspace, two: tuple[str, str], name: str) -> None:
    """Whatever stands in the journal, opening the workspace moves no ref, removes no lock file
    and writes no file: it says the journal is none of gitspace's and leaves it. (A torn one, cut
    off mid-write, is none of a change's: it is dropped.)"""
    _, tip = two
    journal = ws.root / ".git" / "gitspace" / "journal.json"
    journal.write_bytes(HOSTILE[name])
    outside = ws.root / "x.lock"  # what "refs/../../x" names from the common git dir (newer)
    outside.write_text("someone's\n")
    refs, index = git(ws.root, "for-each-ref"), _index(ws)
    with pytest.raises(StateRefused, match="is not an op journal gitspace wrote"):
        gitspace.open(ws.root, agent="tester")
    assert journal.read_bytes() == HOSTILE[name]
    assert git(ws.root, "for-each-ref") == refs and _index(ws) == index
    assert outside.read_text() == "someone's\n"
    assert (ws.root / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    journal.write_bytes(b'{"moves": [')  # torn
    with gitspace.open(ws.root, agent="tester") as again:
        assert not journal.exists() and again.tip() == tip
