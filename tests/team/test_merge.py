"""team/merge.py: an agent's work merged into a branch checked out nowhere is one change of the
writer, a ref move alone (the person's checkout stays byte for byte the same; a failure of the
move leaves the branch); a merge that conflicts is refused before anything is written.
(Into the person's own checkout: tests/team/test_merge_journal.py.)
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from conftest import git
from user_repo import make_user_repo, users_own

import gitspace
from gitspace import faults
from gitspace.errors import Conflict, GitspaceError
from gitspace.team import attach, merge


@pytest.fixture
def user(tmp_path: Path) -> Path:
    """A person's repository with a branch ``side`` checked out nowhere, and agent bob's op."""
    root = make_user_repo(tmp_path / "user")
    git(root, "branch", "side")
    place = attach.attach(root, "bob").path
    with gitspace.open(place, agent="bob") as ws:
        assert ws.call("create", {"path": "bob.txt", "file_text": "by bob\n"}).ok
    return root


def test_a_merge_into_a_branch_checked_out_nowhere_moves_its_ref_alone(user: Path) -> None:
    before, side = users_own(user), git(user, "rev-parse", "side").strip()
    with faults.inject("ref.update", errno.EIO), pytest.raises(GitspaceError):
        merge.merge(user, "bob", into="side")
    assert git(user, "rev-parse", "side").strip() == side
    done = merge.merge(user, "bob", into="side")
    assert done.commit == git(user, "rev-parse", "side").strip() and not done.checkout
    assert git(user, "log", "-1", "--format=%P", "side").split() == [
        side, git(user, "rev-parse", "agent/bob").strip()]
    assert git(user, "reflog", "-1", "--format=%gs", "side").strip() == "gitspace: merge agent/bob"
    after = users_own(user)
    for key in ("HEAD", "index", "index stat", "stash", "tags"):
        assert after[key] == before[key], key
    assert not (user / ".git" / "gitspace" / "journal.json").exists()


def test_a_conflicting_merge_changes_nothing(user: Path) -> None:
    (user / "bob.txt").write_text("by the person\n")
    git(user, "add", "bob.txt")
    git(user, "commit", "-q", "-m", "the person's bob.txt")
    git(user, "branch", "-f", "side", "HEAD")
    refs = git(user, "for-each-ref")
    with pytest.raises(Conflict, match="conflicts in bob.txt. Nothing was changed."):
        merge.merge(user, "bob", into="side")
    assert git(user, "for-each-ref") == refs
