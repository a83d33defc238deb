"""storage/refs.py: refs move only by compare-and-swap, alone or together, and read back as git
reads them (loose or packed)."""

from __future__ import annotations

import pytest
from conftest import call_ok, git

import gitspace
from gitspace.core.writer import COMMITTER
from gitspace.errors import ConcurrentUpdate

REF = "refs/gitspace/private/x"


@pytest.fixture
def two(ws: gitspace.Workspace) -> tuple[str, str]:
    first = call_ok(ws, "create", {"path": "a.txt", "file_text": "one\n"}).commit
    assert first is not None
    call_ok(ws, "create", {"path": "a.txt", "file_text": "two\n"})
    return first, ws.tip()


def test_a_move_from_anywhere_but_old_changes_nothing(ws: gitspace.Workspace,
                                                      two: tuple[str, str]) -> None:
    first, tip = two
    repo, ref = ws.repo, "refs/heads/x"
    repo.cas_ref(ref, None, first, COMMITTER, "made")
    with pytest.raises(ConcurrentUpdate):
        repo.cas_ref(ref, tip, first, COMMITTER, "not from here")
    with pytest.raises(ConcurrentUpdate):
        repo.cas_ref(ref, None, tip, COMMITTER, "it exists")
    assert repo.read_ref(ref) == first
    assert not (repo.commondir / f"{ref}.lock").exists()
    repo.cas_ref(ref, first, tip, COMMITTER, "moved")
    assert git(ws.root, "reflog", "--format=%gs", ref).split("\n")[:2] == ["moved", "made"]


def test_a_packed_ref_reads_and_deletes_as_git_has_it(ws: gitspace.Workspace,
                                                      two: tuple[str, str]) -> None:
    first, _ = two
    repo = ws.repo
    repo.cas_ref(REF, None, first, COMMITTER, "made")
    git(ws.root, "pack-refs", "--all")
    assert not (repo.commondir / REF).exists() and repo.read_ref(REF) == first
    repo.cas_ref(REF, first, None, COMMITTER, "gone")
    assert repo.read_ref(REF) is None
    assert REF not in git(ws.root, "for-each-ref", "--format=%(refname)")
    assert not (repo.commondir / f"{REF}.lock").exists()


def test_a_ref_transaction_moves_and_deletes_together_or_not_at_all(
        ws: gitspace.Workspace, two: tuple[str, str]) -> None:
    first, tip = two
    repo = ws.repo
    repo.cas_ref(REF, None, first, COMMITTER, "made")
    before = git(ws.root, "for-each-ref")
    with pytest.raises(ConcurrentUpdate), repo.ref_transaction(
            [(REF, first, None), ("refs/gitspace/private/y", tip, first)], COMMITTER, "both"):
        pass  # y is not at tip (it does not exist): prepare fails, nothing moves
    assert git(ws.root, "for-each-ref") == before
    with repo.ref_transaction([(REF, first, None), ("refs/gitspace/private/y", None, tip)],
                              COMMITTER, "both"):
        assert repo.read_ref(REF) == first  # locked and verified, not moved yet
    assert repo.read_ref(REF) is None and repo.read_ref("refs/gitspace/private/y") == tip
