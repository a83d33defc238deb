"""Undo and redo walk the ledger: exact trees after every step, refusals change nothing, and an
agent only ever undoes its own ops — across reopenings, because provenance lives in commits."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_clean, call_ok, files, ops, state

import gitspace
from gitspace.errors import Conflict, ToolFailed


def tree(root: Path) -> dict[str, str]:
    return {k: v for k, v in files(root).items() if k != ".gitignore"}


@pytest.fixture
def three(ws: gitspace.Workspace) -> list[str | None]:
    """a.txt built by three ops: 1, then 1 2, then 1 2 3. Returns their op ids."""
    return [
        call_ok(ws, "create", {"path": "a.txt", "file_text": "1\n"}).op,
        call_ok(ws, "append", {"path": "a.txt", "text": "2\n"}).op,
        call_ok(ws, "append", {"path": "a.txt", "text": "3\n"}).op,
    ]


def test_undo_undo_redo_redo(ws: gitspace.Workspace, three: list[str | None]) -> None:
    root = ws.root
    steps: list[tuple[str, dict[str, object], str]] = [
        ("undo", {}, "1\n2\n"), ("undo", {}, "1\n"), ("redo", {}, "1\n2\n"), ("redo", {}, "1\n2\n3\n")]
    for tool, args, expected in steps:
        call_ok(ws, tool, args)
        assert tree(root) == {"a.txt": expected}, tool
        assert_clean(root)
    recorded = ops(root)[-4:]
    assert [o.tool for o in recorded] == ["undo", "undo", "redo", "redo"]
    assert recorded[0].undo_of == (three[2],) and recorded[1].undo_of == (three[1],)
    assert recorded[2].redo_of == recorded[1].op_id and recorded[3].redo_of == recorded[0].op_id
    refused = ws.call("redo", {})
    assert isinstance(refused.error, ToolFailed) and "Nothing to redo" in refused.text


def test_undo_count(ws: gitspace.Workspace, three: list[str | None]) -> None:
    result = call_ok(ws, "undo", {"count": 2})
    assert tree(ws.root) == {"a.txt": "1\n"}
    assert ops(ws.root)[-1].undo_of == (three[2], three[1])
    assert ops(ws.root)[-1].op_id == result.op
    call_ok(ws, "redo", {})
    assert tree(ws.root) == {"a.txt": "1\n2\n3\n"}


def test_undo_one_earlier_op_by_id(ws: gitspace.Workspace, three: list[str | None]) -> None:
    b = call_ok(ws, "create", {"path": "b.txt", "file_text": "bee\n"}).op
    call_ok(ws, "append", {"path": "a.txt", "text": "4\n"})
    call_ok(ws, "undo", {"op": b})
    assert tree(ws.root) == {"a.txt": "1\n2\n3\n4\n"}
    assert ops(ws.root)[-1].undo_of == (b,)
    before = state(ws.root)
    refused = ws.call("undo", {"op": three[0]})  # the create: a.txt was changed since
    assert isinstance(refused.error, Conflict)
    assert state(ws.root) == before


def test_undo_op_merges_a_non_overlapping_earlier_change(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "top\n" + "mid\n" * 5 + "end\n"})
    first = call_ok(ws, "str_replace", {"path": "a.txt", "old_str": "top", "new_str": "TOP"}).op
    call_ok(ws, "str_replace", {"path": "a.txt", "old_str": "end", "new_str": "END"})
    call_ok(ws, "undo", {"op": first})
    assert tree(ws.root) == {"a.txt": "top\n" + "mid\n" * 5 + "END\n"}
    refused = ws.call("undo", {"op": first})
    assert not refused.ok and "already undone" in refused.text
    assert_clean(ws.root)


def test_undo_after_redo_reverts_the_redo(ws: gitspace.Workspace, three: list[str | None]) -> None:
    undo = call_ok(ws, "undo", {}).op
    redo = call_ok(ws, "redo", {}).op
    call_ok(ws, "undo", {})
    assert tree(ws.root) == {"a.txt": "1\n2\n"}
    last = ops(ws.root)[-1]
    assert last.undo_of == (redo,) and undo != redo
    call_ok(ws, "undo", {})
    assert tree(ws.root) == {"a.txt": "1\n"}


def test_redo_after_a_new_op_is_refused(ws: gitspace.Workspace, three: list[str | None]) -> None:
    call_ok(ws, "undo", {})
    call_ok(ws, "create", {"path": "c.txt", "file_text": "new\n"})
    before = state(ws.root)
    refused = ws.call("redo", {})
    assert isinstance(refused.error, ToolFailed)
    assert "a new op (create" in refused.text
    assert state(ws.root) == before


def test_repeated_undo_walks_back_and_never_undoes_the_undo(ws: gitspace.Workspace,
                                                            three: list[str | None]) -> None:
    expected = ["1\n2\n", "1\n", None]
    for want in expected:
        call_ok(ws, "undo", {})
        assert tree(ws.root).get("a.txt") == want
    before = state(ws.root)
    refused = ws.call("undo", {})
    assert isinstance(refused.error, ToolFailed) and "Nothing to undo" in refused.text
    assert state(ws.root) == before
    assert [o.undo_of for o in ops(ws.root)[-3:]] == [(three[2],), (three[1],), (three[0],)]


def test_conflicting_undo_is_refused_and_changes_nothing(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "x\n"})
    first = call_ok(ws, "str_replace", {"path": "a.txt", "old_str": "x", "new_str": "y"}).op
    call_ok(ws, "str_replace", {"path": "a.txt", "old_str": "y", "new_str": "z"})
    before = state(ws.root)
    refused = ws.call("undo", {"op": first})
    assert isinstance(refused.error, Conflict)
    assert f"Cannot undo str_replace ({first}): a.txt was changed again since" in refused.text
    assert "Nothing was changed" in refused.text
    assert state(ws.root) == before
    assert_clean(ws.root)


def test_undo_of_create_deletes_and_undo_of_delete_restores(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "d/new.txt", "file_text": "fresh\n"})
    call_ok(ws, "undo", {})
    assert tree(ws.root) == {} and not (ws.root / "d").exists()
    call_ok(ws, "redo", {})
    assert tree(ws.root) == {"d/new.txt": "fresh\n"}
    call_ok(ws, "create", {"path": "d/other.txt", "file_text": "other\n"})
    call_ok(ws, "delete", {"path": "d"})
    assert tree(ws.root) == {}
    call_ok(ws, "undo", {})
    assert tree(ws.root) == {"d/new.txt": "fresh\n", "d/other.txt": "other\n"}
    assert_clean(ws.root)


def test_undo_never_deletes_untracked_files(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "d/a.txt", "file_text": "a\n"})
    (ws.root / "d" / "mine.txt").write_text("untracked\n")
    call_ok(ws, "undo", {})
    assert (ws.root / "d" / "mine.txt").read_text() == "untracked\n"
    assert not (ws.root / "d" / "a.txt").exists()


def test_agents_undo_only_their_own_ops(ws_root: Path) -> None:
    gitspace.init(ws_root, agent="a1").close()
    with gitspace.open(ws_root, agent="a1") as a1, gitspace.open(ws_root, agent="a2") as a2:
        body = "top\nm\nm\nm\nbottom\n"
        call_ok(a1, "create", {"path": "a.txt", "file_text": body})
        call_ok(a2, "create", {"path": "b.txt", "file_text": "a2\n"})
        mine = call_ok(a1, "append", {"path": "a.txt", "text": "a1 again\n"}).op
        call_ok(a2, "append", {"path": "b.txt", "text": "a2 again\n"})
        call_ok(a2, "str_replace", {"path": "a.txt", "old_str": "top", "new_str": "TOP"})
        undo = call_ok(a1, "undo", {})
        assert ops(ws_root)[-1].undo_of == (mine,)
        assert tree(ws_root) == {"a.txt": "TOP" + body[3:], "b.txt": "a2\na2 again\n"}
        call_ok(a2, "undo", {})
        assert tree(ws_root) == {"a.txt": body, "b.txt": "a2\na2 again\n"}
        call_ok(a2, "undo", {})
        assert tree(ws_root) == {"a.txt": body, "b.txt": "a2\n"}
        # a2 made new ops after a1's undo, but a1 may still redo its own undo.
        call_ok(a1, "redo", {})
        assert ops(ws_root)[-1].redo_of == undo.op
        assert tree(ws_root) == {"a.txt": body + "a1 again\n", "b.txt": "a2\n"}
        assert {o.agent for o in ops(ws_root)[1:]} == {"a1", "a2"}
    assert_clean(ws_root)


def test_undo_and_redo_work_after_reopening(ws_root: Path) -> None:
    with gitspace.init(ws_root, agent="tester") as ws:
        call_ok(ws, "create", {"path": "a.txt", "file_text": "1\n"})
        call_ok(ws, "append", {"path": "a.txt", "text": "2\n"})
    with gitspace.open(ws_root, agent="tester") as ws:
        call_ok(ws, "undo", {})
    assert tree(ws_root) == {"a.txt": "1\n"}
    with gitspace.open(ws_root, agent="tester") as ws:
        call_ok(ws, "redo", {})
    assert tree(ws_root) == {"a.txt": "1\n2\n"}
    with gitspace.open(ws_root, agent="someone-else") as ws:
        refused = ws.call("undo", {})
        assert not refused.ok and "by someone-else" in refused.text
    with gitspace.open(ws_root, agent="tester") as ws:
        call_ok(ws, "undo", {"count": 2})
    assert tree(ws_root) == {}
    assert_clean(ws_root)
