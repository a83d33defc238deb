"""replay/scratch.py: the scratch starts, commits and tags through the one writer, privately."""

from __future__ import annotations

from conftest import call_ok, git

import gitspace
from gitspace.replay.scratch import BRANCH, open_scratch


def test_the_scratch_checks_out_its_start_and_commits_with_files_and_index(
        ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "d/a.txt", "file_text": "a\n"})
    call_ok(ws, "create", {"path": "run.sh", "file_text": "#!/bin/sh\n"})
    call_ok(ws, "checkpoint", {"name": "here"})
    start = ws.tip()
    call_ok(ws, "create", {"path": "d/a.txt", "file_text": "changed\n"})
    later = ws.repo.commit(ws.tip())
    with open_scratch(ws.repo, start) as sc:
        root = sc.repo.root
        assert sc.tip() == start and sc.on_branch() and sc.repo.head_branch() == BRANCH
        assert (root / "d" / "a.txt").read_text() == "a\n"
        assert git(root, "diff-index", "--cached", "HEAD") == ""  # the index is the tree
        assert git(root, "status", "--porcelain") == ""
        new = sc.commit_tree(later.tree, later)
        assert sc.tip() == new and (root / "d" / "a.txt").read_text() == "changed\n"
        assert git(root, "status", "--porcelain") == ""
        sc.set_tags({"refs/tags/gitspace/here": new, "refs/tags/gitspace/two": start})
        assert git(root, "rev-parse", "refs/tags/gitspace/here", "refs/tags/gitspace/two").split() \
            == [new, start]
        assert not (sc.repo.gitdir / "gitspace" / "journal.json").exists()  # private: none
    assert not root.exists()
    assert ws.repo.read_ref("refs/tags/gitspace/here") != new  # the user's repository: untouched
