"""core/workspace.py: where a call's identity is built, and the workspace's own changes.

``init``'s first commit is one change of the writer that is finished, not rolled back, when it
fails after its branch was made (there is nothing before it to roll back to): the next ``open``
completes it. ``open`` finishes whatever change a crash cut short before anything else runs.
``identity`` is the one place a call's identity takes the workspace's agent and session.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from conftest import git, ops

import gitspace
from gitspace import faults
from gitspace.errors import WriteFailed


def test_a_first_commit_cut_short_is_finished_by_the_next_open(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "found.txt").write_text("there before gitspace\n")
    with faults.inject("index.store", errno.EIO), pytest.raises(WriteFailed):
        gitspace.init(root, agent="tester")
    assert (root / ".git" / "gitspace" / "journal.json").exists()  # the branch was made
    with gitspace.open(root, agent="tester") as ws:
        assert not ws.writer.journal.exists()
        first = ops(root)
        assert [op.tool for op in first] == ["init"] and first[0].args == {"files": 2}
    assert git(root, "status", "--porcelain") == ""  # found.txt and .gitignore, indexed
    assert git(root, "ls-files").split() == [".gitignore", "found.txt"]


def test_identity_takes_the_workspaces_agent_and_session_unless_told(tmp_path: Path) -> None:
    with gitspace.init(tmp_path / "ws", agent="ann", session="s-1") as ws:
        who = ws.identity("create", tool_use_id="toolu_1")
        assert (who.tool, who.agent, who.session, who.tool_use_id, who.source) == (
            "create", "ann", "s-1", "toolu_1", "tool")
        assert ws.identity("create", agent="bob", session=None).agent == "bob"
        assert ws.identity("init", source="init").op({}).source == "init"
        assert (ws.agent, ws.session) == ("ann", "s-1")
