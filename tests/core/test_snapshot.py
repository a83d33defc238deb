"""core/snapshot.py: outside changes become one external op, through the one writer."""

from __future__ import annotations

from conftest import call_ok, git, ops

import gitspace
from gitspace.core.snapshot import record_paths


def test_a_snapshot_is_one_external_op_with_the_index_following(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    (ws.root / "a.txt").write_text("edited by a person\n")
    (ws.root / "new.txt").write_text("new\n")
    done = ws.snapshot()
    assert done.ok and done.op is not None and done.changed == ["a.txt", "new.txt"]
    last = ops(ws.root)[-1]
    assert (last.source, last.tool, last.op_id) == ("external", "external_edit", done.op)
    assert git(ws.root, "status", "--porcelain") == ""
    assert ws.snapshot().op is None  # nothing left: no commit


def test_record_paths_records_only_the_paths_named(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    (ws.root / "a.txt").write_text("changed\n")
    (ws.root / "b.txt").write_text("left pending\n")
    op = record_paths(ws, ["a.txt"], "Recorded for the test.")
    assert op is not None and ops(ws.root)[-1].op_id == op
    assert git(ws.root, "status", "--porcelain") == "?? b.txt\n"
    assert record_paths(ws, ["a.txt"], "again") is None
