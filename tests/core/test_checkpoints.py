"""Checkpoints are annotated tags under refs/tags/gitspace/; restore is a new op, never a rewind."""

from __future__ import annotations

import pytest
from conftest import assert_clean, call_ok, files, git, head, ops, state

import gitspace
from gitspace.errors import BadArguments, GitspaceError, NotFound


def tree_of(ws: gitspace.Workspace, rev: str = "HEAD") -> str:
    return git(ws.root, "rev-parse", f"{rev}^{{tree}}").strip()


def test_checkpoint_is_an_annotated_tag_at_the_tip(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "1\n"})
    tip = head(ws.root)
    before = state(ws.root)
    result = call_ok(ws, "checkpoint", {"name": "junction-1", "message": "before east\nGo"})
    assert result.op is None and result.commit == tip
    assert state(ws.root) == before  # no commit, no file change
    ref = "refs/tags/gitspace/junction-1"
    assert git(ws.root, "cat-file", "-t", ref).strip() == "tag"
    assert git(ws.root, "rev-parse", f"{ref}^{{commit}}").strip() == tip
    body = git(ws.root, "cat-file", "-p", ref)
    assert "\ntag gitspace/junction-1\n" in body and "tagger tester <tester@gitspace>" in body
    assert "before east Go\n\nGitspace-Checkpoint: junction-1\nGitspace-Branch: main\n" in body
    assert git(ws.root, "tag", "--list") == "gitspace/junction-1\n"
    assert_clean(ws.root)


@pytest.mark.parametrize("name", ["", "-x", "a b", "a..b", "x.lock", "a/b", "x.", ".x", "é",
                                  "a" * 65, "a\nb", "a:b", "a~1", "a^", "HEAD@{1}", "a*"])
def test_bad_checkpoint_names_are_refused(ws: gitspace.Workspace, name: str) -> None:
    result = ws.call("checkpoint", {"name": name})
    assert not result.ok and isinstance(result.error, BadArguments)
    assert git(ws.root, "for-each-ref", "refs/tags") == ""


def test_duplicate_checkpoint_is_refused(ws: gitspace.Workspace) -> None:
    call_ok(ws, "checkpoint", {"name": "cp"})
    first = git(ws.root, "rev-parse", "refs/tags/gitspace/cp").strip()
    call_ok(ws, "create", {"path": "a.txt", "file_text": "1\n"})
    result = ws.call("checkpoint", {"name": "cp"})
    assert not result.ok and isinstance(result.error, GitspaceError)
    assert "already exists" in result.text
    assert git(ws.root, "rev-parse", "refs/tags/gitspace/cp").strip() == first


def test_restore_is_a_new_op_with_the_checkpoint_tree(ws: gitspace.Workspace) -> None:
    root = ws.root
    call_ok(ws, "create", {"path": "a.txt", "file_text": "1\n"})
    call_ok(ws, "create", {"path": "keep/b.txt", "file_text": "b\n"})
    call_ok(ws, "checkpoint", {"name": "cp"})
    saved_tree, saved_files = tree_of(ws), files(root)
    call_ok(ws, "append", {"path": "a.txt", "text": "dead end\n"})
    call_ok(ws, "create", {"path": "new/c.txt", "file_text": "c\n"})
    call_ok(ws, "delete", {"path": "keep/b.txt"})
    abandoned = head(root)
    result = call_ok(ws, "restore", {"name": "cp"})
    assert result.text == "Restored checkpoint cp: 3 file(s) changed."
    assert sorted(result.changed) == ["a.txt", "keep/b.txt", "new/c.txt"]
    assert tree_of(ws) == saved_tree
    assert files(root) == saved_files and not (root / "new").exists()
    assert git(root, "rev-parse", "HEAD^").strip() == abandoned
    assert ops(root)[-1].tool == "restore" and ops(root)[-1].args == {"name": "cp"}
    assert [o.tool for o in ops(root)][-4:-1] == ["append", "create", "delete"]  # still there
    assert call_ok(ws, "restore", {"name": "cp"}).text.startswith("unchanged")
    # The restore is an op like any other: undo brings the dead end back.
    call_ok(ws, "undo", {})
    assert tree_of(ws) == tree_of(ws, abandoned)
    assert_clean(root)


def test_restore_commits_an_outside_change_first(ws: gitspace.Workspace) -> None:
    root = ws.root
    call_ok(ws, "create", {"path": "a.txt", "file_text": "1\n"})
    call_ok(ws, "checkpoint", {"name": "cp"})
    saved_tree = tree_of(ws)
    call_ok(ws, "append", {"path": "a.txt", "text": "2\n"})
    (root / "a.txt").write_text("edited by hand\n")
    (root / "untracked.txt").write_text("mine\n")
    result = call_ok(ws, "restore", {"name": "cp"})
    assert result.external_op is not None
    assert [o.tool for o in ops(root)][-2:] == ["external_edit", "restore"]
    assert git(root, "show", "HEAD~1:a.txt") == "edited by hand\n"
    assert tree_of(ws) == saved_tree
    assert (root / "a.txt").read_text() == "1\n"
    assert (root / "untracked.txt").read_text() == "mine\n"  # never deleted, never committed
    assert git(root, "status", "--porcelain") == "?? untracked.txt\n"


def test_restore_unknown_checkpoint(ws: gitspace.Workspace) -> None:
    call_ok(ws, "checkpoint", {"name": "one"})
    before = state(ws.root)
    result = ws.call("restore", {"name": "two"})
    assert isinstance(result.error, NotFound) and "Existing checkpoints: one." in result.text
    assert state(ws.root) == before
