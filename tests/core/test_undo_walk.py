"""How undo walks a history that is not only gitspace's ops, and exactly what undo and redo say
and record. (The semantics of undo and redo themselves are in test_undo.py and
test_no_agent.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import call_ok, files, git, message_of, state

import gitspace
from gitspace.errors import Conflict, GitspaceError, NotFound, ToolFailed


def tree(root: Path) -> dict[str, str]:
    return {k: v for k, v in files(root).items() if k != ".gitignore"}


def commit_by_hand(root: Path, message: str) -> None:
    (root / "hand.txt").write_text(message)
    git(root, "add", "hand.txt")
    git(root, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "-m", message)


def test_undo_walks_past_a_malformed_op_commit(ws: gitspace.Workspace) -> None:
    first = call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"}).op
    commit_by_hand(ws.root, "broken\n\nGitspace-Format: 1\nGitspace-Op: nope")
    second = call_ok(ws, "create", {"path": "b.txt", "file_text": "b\n"}).op
    assert f"Undid 1 op(s): create {second}." == call_ok(ws, "undo", {}).text
    # past the malformed commit, to the first op
    assert f"Undid 1 op(s): create {first}." == call_ok(ws, "undo", {}).text
    assert tree(ws.root) == {"hand.txt": "broken\n\nGitspace-Format: 1\nGitspace-Op: nope"}


def test_undo_stops_at_a_commit_that_is_not_an_op(ws: gitspace.Workspace) -> None:
    """A person's own commit ends what undo walks back over: ops before it are history."""
    call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    commit_by_hand(ws.root, "a person's commit")
    call_ok(ws, "create", {"path": "b.txt", "file_text": "b\n"})
    call_ok(ws, "undo", {})
    refused = ws.call("undo", {})
    assert not refused.ok and "Nothing to undo" in refused.text
    assert tree(ws.root) == {"a.txt": "a\n", "hand.txt": "a person's commit"}


def test_what_undo_and_redo_say_and_record(ws: gitspace.Workspace) -> None:
    ids = [call_ok(ws, "create", {"path": f"{n}.txt", "file_text": f"{n}\n"}).op
           for n in ("one", "two", "three")]
    undone = call_ok(ws, "undo", {"count": 2})
    assert undone.text == f"Undid 2 op(s): create {ids[2]}, create {ids[1]}."
    assert message_of(ws.root).split("\n", 1)[0] == "undo create (+1)"
    single = call_ok(ws, "undo", {})
    assert single.text == f"Undid 1 op(s): create {ids[0]}."
    assert message_of(ws.root).split("\n", 1)[0] == "undo create"
    redone = call_ok(ws, "redo", {})
    assert redone.text == f"Redid what undo {single.op} reverted ({ids[0]})."
    assert message_of(ws.root).split("\n", 1)[0] == "redo"
    again = call_ok(ws, "redo", {})
    assert again.text == f"Redid what undo {undone.op} reverted ({ids[2]}, {ids[1]})."
    assert tree(ws.root) == {"one.txt": "one\n", "two.txt": "two\n", "three.txt": "three\n"}


def test_undo_of_an_op_whose_change_is_already_gone_changes_nothing(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    first = call_ok(ws, "create", {"path": "b.txt", "file_text": "b\n"}).op
    call_ok(ws, "delete", {"path": "b.txt"})
    result = call_ok(ws, "undo", {"op": first})
    assert result.unchanged and tree(ws.root) == {"a.txt": "a\n"}


def test_undo_keeps_an_executable_bit_it_restores(ws: gitspace.Workspace) -> None:
    (ws.root / "run.sh").write_text("#!/bin/sh\necho a\n")
    (ws.root / "run.sh").chmod(0o755)
    assert ws.snapshot().ok
    call_ok(ws, "str_replace", {"path": "run.sh", "old_str": "echo a", "new_str": "echo b"})
    ws_person = gitspace.open(ws.root)
    try:
        call_ok(ws_person, "undo", {})
    finally:
        ws_person.close()
    assert (ws.root / "run.sh").read_text() == "#!/bin/sh\necho a\n"
    assert git(ws.root, "ls-files", "-s", "run.sh").split()[0] == "100755"
    assert (ws.root / "run.sh").stat().st_mode & 0o111


def refusal(ws: gitspace.Workspace, tool: str, args: dict[str, object]) -> GitspaceError:
    """The error of a refused call, which changed nothing."""
    before = state(ws.root)
    result = ws.call(tool, args)
    assert not result.ok and result.error is not None, result.text
    assert state(ws.root) == before
    return result.error


def test_an_op_on_another_branch_is_named_there_exactly(ws: gitspace.Workspace) -> None:
    a = call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"}).op
    call_ok(ws, "branch", {"name": "side"})
    side = call_ok(ws, "create", {"path": "b.txt", "file_text": "b\n"}).op
    call_ok(ws, "switch", {"name": "main"})
    undo = refusal(ws, "undo", {"op": side})
    assert isinstance(undo, NotFound)
    assert undo.message == f"There is no op {side} on branch main: it was recorded on another branch."
    assert undo.hint == ("'gitspace log' lists the ops of this branch; undo an op on its own branch "
                         "('gitspace switch BRANCH').")
    restore = refusal(ws, "restore", {"op": side})
    assert isinstance(restore, NotFound)
    assert restore.message == f"There is no op {side} on branch main."
    assert restore.hint == "'gitspace log' lists op ids."
    call_ok(ws, "create", {"path": "c.txt", "file_text": "c\n"})
    call_ok(ws, "restore", {"op": a})  # an op of this branch: the files right after it
    assert tree(ws.root) == {"a.txt": "a\n"}


OP = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


@pytest.mark.parametrize(("tool", "args", "where"), [
    ("checkpoint", {"name": "cp"}, "checkpoint cp"),
    ("branch", {"name": "side", "switch": False}, "branch side"),
])
def test_undo_of_an_op_that_made_a_ref_says_there_is_nothing_to_undo(
        ws: gitspace.Workspace, tool: str, args: dict[str, object], where: str) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    assert ws.call(tool, args, op_id=OP).ok
    error = refusal(ws, "undo", {"op": OP})
    assert isinstance(error, ToolFailed)
    assert error.message == (f"Op {OP} created {where}; it changed no files, so there is nothing "
                             "to undo.")


def test_redo_with_nothing_undone_says_exactly_that(ws: gitspace.Workspace) -> None:
    error = refusal(ws, "redo", {})
    assert isinstance(error, ToolFailed)
    assert error.message == "Nothing to redo: there is no undo to re-apply."


def test_undo_of_an_op_with_a_detached_head_says_so(ws: gitspace.Workspace) -> None:
    """Whatever the op named, with HEAD detached there is no branch to undo it on: the refusal
    says that (not what the op was), and changes nothing."""
    call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    assert ws.call("checkpoint", {"name": "cp"}, op_id=OP).ok
    git(ws.root, "checkout", "-q", "--detach")
    before = git(ws.root, "for-each-ref"), git(ws.root, "rev-parse", "HEAD"), tree(ws.root)
    for tool, args in (("undo", {"op": OP}), ("restore", {"op": OP})):
        result = ws.call(tool, args)
        assert result.error is not None and result.error.message == (
            "HEAD is detached, so there is no branch to record ops on."), tool
        assert (git(ws.root, "for-each-ref"), git(ws.root, "rev-parse", "HEAD"),
                tree(ws.root)) == before


def test_a_redo_whose_change_overlaps_a_later_one_is_refused_by_name(ws_root: Path) -> None:
    """Another agent's op after an undo leaves the redo to its agent; when that op changed the
    same lines, the redo is a conflict naming the undo it would re-apply, and changes nothing."""
    gitspace.init(ws_root, agent="a1").close()
    with gitspace.open(ws_root, agent="a1") as a1, gitspace.open(ws_root, agent="a2") as a2:
        call_ok(a1, "create", {"path": "a.txt", "file_text": "x\n"})
        call_ok(a1, "str_replace", {"path": "a.txt", "old_str": "x", "new_str": "y"})
        undone = call_ok(a1, "undo", {}).op
        call_ok(a2, "str_replace", {"path": "a.txt", "old_str": "x", "new_str": "z"})
        error = refusal(a1, "redo", {})
        assert isinstance(error, Conflict)
        assert error.message == (f"Cannot undo undo {undone}: a.txt was changed again since, and "
                                 "the changes overlap.")
        assert error.hint == "Undo the later ops first, or restore a checkpoint. Nothing was changed."


def test_undo_of_an_op_that_removed_two_files_restores_each_with_its_mode(
        ws: gitspace.Workspace) -> None:
    """A path already back as it was before the op is left alone, and the next one still
    restored: with its executable bit, which a file written anew would not have."""
    (ws.root / "d").mkdir()
    (ws.root / "d" / "a.txt").write_text("a\n")
    (ws.root / "d" / "run.sh").write_text("#!/bin/sh\n")
    (ws.root / "d" / "run.sh").chmod(0o755)
    assert ws.snapshot().ok
    gone = call_ok(ws, "delete", {"path": "d"}).op
    call_ok(ws, "create", {"path": "d/a.txt", "file_text": "a\n"})  # back as it was
    call_ok(ws, "undo", {"op": gone})
    assert tree(ws.root) == {"d/a.txt": "a\n", "d/run.sh": "#!/bin/sh\n"}
    assert git(ws.root, "ls-files", "-s", "d/run.sh").split()[0] == "100755"
    assert (ws.root / "d" / "run.sh").stat().st_mode & 0o111
