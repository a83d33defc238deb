"""The op index: undo --op and show find an op without walking the branch, and the index, being
derived from the ledger, follows every move of the branch and survives being lost or damaged."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from conftest import call_ok, git, head, ops

import gitspace
from gitspace.core import timeline, undo
from gitspace.errors import NotFound, ToolFailed
from gitspace.storage import opindex


def make(ws: gitspace.Workspace, n: int, prefix: str = "f") -> list[str]:
    """``n`` ops each creating its own file; their op ids, oldest first."""
    return [call_ok(ws, "create", {"path": f"{prefix}{i}.md", "file_text": f"{i}\n"}).op or ""
            for i in range(n)]


def rows(ws: gitspace.Workspace, branch: str) -> tuple[str, int] | None:
    with sqlite3.connect(opindex.index_path(ws.repo)) as db:
        return db.execute("SELECT tip, length FROM chains WHERE branch = ?", (branch,)).fetchone()


def test_undo_op_finds_an_old_op_and_knows_it_was_undone(ws: gitspace.Workspace) -> None:
    ids = make(ws, 30)
    done = call_ok(ws, "undo", {"op": ids[3]})
    assert done.op and f"create {ids[3]}" in done.text and not (ws.root / "f3.md").exists()
    assert rows(ws, "main") == (ws.repo.rev_parse(f"{ws.tip()}~1"), 31)  # read once, up to then
    again = ws.call("undo", {"op": ids[3]})
    assert not again.ok and "is already undone" in again.text
    assert rows(ws, "main") == (ws.tip(), 32)  # caught up by the one op made since
    call_ok(ws, "redo")
    assert not ws.call("undo", {"op": ids[3]}).ok  # a redone undo still lists it (as before)
    call_ok(ws, "undo", {"op": ids[4]})
    assert timeline.find(ws, ids[5]).commit == head(ws.root, "HEAD~27")
    missing = ws.call("undo", {"op": "0" * 26})
    assert not missing.ok and "There is no op" in missing.text


def test_an_op_on_another_branch_is_not_this_branchs(ws: gitspace.Workspace) -> None:
    ids = make(ws, 3)
    call_ok(ws, "checkpoint", {"name": "base"})
    call_ok(ws, "branch", {"name": "side"})
    side = make(ws, 2, "s")
    call_ok(ws, "undo", {"op": ids[0]})  # main's op, reachable from side too
    call_ok(ws, "switch", {"name": "main"})
    with pytest.raises(NotFound):
        undo.op_target(ws, side[0])
    assert undo.op_target(ws, ids[0])[0].op_id == ids[0]  # not undone on main
    assert rows(ws, "side") is not None and rows(ws, "main") is not None


def test_a_branch_moved_back_or_rewritten_is_followed(ws: gitspace.Workspace) -> None:
    ids = make(ws, 6)
    undo.op_target(ws, ids[5])
    git(ws.root, "update-ref", "refs/heads/main", "HEAD~2")  # moved back by hand
    git(ws.root, "read-tree", "-u", "--reset", "HEAD")
    with pytest.raises(NotFound):
        undo.op_target(ws, ids[5])
    assert undo.op_target(ws, ids[3])[0].op_id == ids[3]
    assert rows(ws, "main") == (ws.tip(), 5)
    # Rewritten: the same branch name, another history with an undo of ids[1] in it.
    git(ws.root, "update-ref", "refs/heads/main", "HEAD~2")
    git(ws.root, "read-tree", "-u", "--reset", "HEAD")
    call_ok(ws, "undo", {"op": ids[1]})
    newer = make(ws, 2, "g")
    with pytest.raises(ToolFailed, match="already undone"):
        undo.op_target(ws, ids[1])
    assert undo.op_target(ws, newer[1])[0].op_id == newer[1]
    assert rows(ws, "main") == (ws.tip(), 6)


@pytest.mark.parametrize("damage", ["garbage", "wrong format", "deleted", "lying row"])
def test_a_lost_or_damaged_index_is_rebuilt_from_the_ledger(ws: gitspace.Workspace,
                                                           damage: str) -> None:
    ids = make(ws, 8)
    undo.op_target(ws, ids[2])
    path = opindex.index_path(ws.repo)
    if damage == "garbage":
        path.write_bytes(b"this is not a database" * 100)
    elif damage == "wrong format":
        with sqlite3.connect(path) as db:
            db.execute("UPDATE meta SET value = '0'")
    elif damage == "deleted":
        path.unlink()
    else:  # the row for ids[2] points at another op's commit
        with sqlite3.connect(path) as db:
            other = db.execute("SELECT sha FROM ops WHERE op = ?", (ids[6],)).fetchone()[0]
            db.execute("UPDATE ops SET sha = ? WHERE op = ?", (other, ids[2]))
    op, commit = undo.op_target(ws, ids[2])
    assert op.op_id == ids[2] and commit.sha == head(ws.root, "HEAD~5")
    assert rows(ws, "main") == (ws.tip(), 9)


def test_readers_in_parallel_build_one_index(ws: gitspace.Workspace, ws_root: Path) -> None:
    ids = make(ws, 12)
    found: list[str] = []
    errors: list[BaseException] = []

    def look(i: int) -> None:
        try:
            with gitspace.open(ws_root, agent="tester") as mine:
                found.append(undo.op_target(mine, ids[i])[0].op_id)
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=look, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted(found) == sorted(ids[:8])
    assert rows(ws, "main") == (ws.tip(), 13)
    assert [op.op_id for op in ops(ws_root)][1:] == ids


def test_an_index_that_cannot_be_written_leaves_the_answers_unchanged(
        ws: gitspace.Workspace) -> None:
    """A folder in the index's place (as a read-only clone would be, even for root): every lookup
    is answered by a walk, the same answers, and nothing escapes ws.call."""
    ids = make(ws, 6)
    call_ok(ws, "undo", {"op": ids[1]})
    path = opindex.index_path(ws.repo)
    path.unlink()
    path.mkdir()
    (path / "keep").write_text("not the index\n")
    assert undo.op_target(ws, ids[3])[1].sha == head(ws.root, "HEAD~3")
    with pytest.raises(ToolFailed, match="already undone"):
        undo.op_target(ws, ids[1])
    assert timeline.find(ws, ids[4]).commit == head(ws.root, "HEAD~2")
    done = ws.call("undo", {"op": ids[3]})
    assert done.ok and not (ws.root / "f3.md").exists()
    again = ws.call("undo", {"op": ids[3]})
    assert not again.ok and "is already undone" in again.text
    assert ws.call("restore", {"op": ids[0]}).ok
    assert (path / "keep").read_text() == "not the index\n"
