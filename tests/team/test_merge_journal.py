"""team/merge_journal.py: a merge into the person's own checkout is git's (``read-tree -m -u``,
their filters), journaled so that a crash at any instant is undone: killed after git wrote the
files and before the branch moved, the next merge (or ``repair``) puts back their files and
index exactly. A journal no merge wrote is refused by name and acted on never.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import git
from user_repo import make_user_repo, users_own

import gitspace
from gitspace.storage.statefiles import StateRefused
from gitspace.team import attach, merge

KILLED_MERGE = textwrap.dedent("""
    import os, sys
    from gitspace import faults
    from gitspace.team import merge
    with faults.inject("ref.update", lambda: os._exit(9)):  # git has written the files
        merge.merge(sys.argv[1], "bob")
""")


@pytest.fixture
def user(tmp_path: Path) -> Path:
    root = make_user_repo(tmp_path / "user")
    place = attach.attach(root, "bob").path
    with gitspace.open(place, agent="bob") as ws:
        assert ws.call("create", {"path": "bob.txt", "file_text": "by bob\n"}).ok
    return root


def test_a_merge_killed_before_the_branch_moved_is_put_back(user: Path) -> None:
    before, tip = users_own(user), git(user, "rev-parse", "HEAD").strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT")}
    proc = subprocess.run([sys.executable, "-c", KILLED_MERGE, str(user)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 9, proc.stdout + proc.stderr
    assert (user / "bob.txt").exists()  # git had written it
    assert (user / ".git" / "gitspace" / "merge.json").exists()
    assert merge.repair(user) is True
    assert not (user / "bob.txt").exists() and git(user, "rev-parse", "HEAD").strip() == tip
    after = users_own(user)
    for key in ("HEAD", "refs", "index", "stash", "tags"):
        assert after[key] == before[key], key
    assert not (user / ".git" / "gitspace" / "merge.json").exists()
    assert merge.merge(user, "bob").checkout  # and then the merge goes through


@pytest.mark.parametrize("journal", [
    b"[]", b'{"ref": "refs/../../x", "old": null, "new": null, "files": []}',
    b'{"ref": "refs/heads/main", "old": "HEAD", "new": "HEAD", "files": [], "checkout": true}',
    b'{"ref": "refs/heads/main", "old": "' + b"0" * 40 + b'", "new": "' + b"1" * 40
    + b'", "files": [".git/config"], "checkout": true}',
])
def test_a_journal_no_merge_wrote_is_refused_and_acted_on_never(user: Path,
                                                                journal: bytes) -> None:
    path = user / ".git" / "gitspace" / "merge.json"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(journal)
    outside = user / "x.lock"  # what refs/../../x.lock names, newer than the journal
    outside.write_text("someone's\n")
    before = users_own(user, ignore=("x.lock",))
    with pytest.raises(StateRefused, match="is not a merge journal gitspace wrote"):
        merge.repair(user)
    assert outside.read_text() == "someone's\n" and path.read_bytes() == journal
    assert users_own(user, ignore=("x.lock",)) == before
    path.write_bytes(b'{"ref": "refs/heads/ma')  # torn: it never took effect
    assert merge.repair(user) is False and not path.exists()
