"""The tree of calls read from records that may be hostile: trailers in a history anyone could
have written, and session files on disk. A loop, a forged id or a damaged value never hangs or
breaks a reader; it is shown no deeper than what is known."""

from __future__ import annotations

from pathlib import Path

from gitspace.agent import calltree
from gitspace.agent.session import Session
from gitspace.storage.ledger import Op, new_op_id


def op(session: str, parent: str | None) -> Op:
    return Op(op_id=new_op_id(), tool="create", args={}, session=session,
              parent_session=parent, parent_tool_use_id="toolu_x" if parent else None)


def test_depths_follow_the_chain_and_stop_at_a_loop() -> None:
    top, child, grand = new_op_id(), new_op_id(), new_op_id()
    ops = [op(top, None), op(child, top), op(grand, child)]
    assert list(calltree.depths(ops).values()) == [0, 1, 2]
    a, b = new_op_id(), new_op_id()  # each names the other as its parent
    looped = [op(a, b), op(b, a)]
    assert set(calltree.depths(looped).values()) == {calltree.MAX_DEPTH}
    # Only the grandchild's op here: its parent's parent comes from a saved file, or nowhere.
    assert list(calltree.depths([ops[2]], {child: top}.get).values()) == [2]
    assert list(calltree.depths([ops[2]]).values()) == [1]


def test_a_session_file_is_looked_up_only_for_a_session_id(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text("not a session")
    lookup = calltree.saved_parent(tmp_path / "ws")
    assert lookup("../../x") is None and lookup("a/../../x") is None
    assert lookup(new_op_id()) is None  # no such file


def session(sid: str, parent: object, created: float) -> Session:
    s = Session(sid, "t", None, "m", False, created=created)
    s.parent_session = parent  # type: ignore[assignment]
    return s


def test_ordered_lists_children_under_parents_and_survives_damaged_links() -> None:
    top, child, grand, other = (new_op_id() for _ in range(4))
    a, b = new_op_id(), new_op_id()
    rows = calltree.ordered([
        session(grand, child, 3), session(other, None, 2), session(child, top, 2.5),
        session(top, None, 1), session(a, b, 4), session(b, a, 5),
        session(new_op_id(), ["not", "an", "id"], 6), session(new_op_id(), {"x": 1}, "soon"),
    ])
    ids = [s.id for s, _ in rows]
    at = ids.index(top)
    assert ids[at:at + 4] == [top, child, grand, other]
    assert [d for _, d in rows][at:at + 4] == [0, 1, 2, 0]
    assert len(rows) == 8 and len(set(ids)) == 8  # the loop and the damaged ones, shown flat
    assert {d for s, d in rows if s.id in (a, b)} == {0}
