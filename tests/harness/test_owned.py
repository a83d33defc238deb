"""harness/owned.py: a harness's call, recorded in a workspace gitspace owns, is one change of
the writer: the person's pending edit (its own ``external`` op, by the person) and the call's op
(source ``harness``, by the harness, with its session and tool-use id) reach the branch in one
move, and its files and index with it. A failure of that move leaves the branch, the index and
the files as they were, and the next call records both.
"""

from __future__ import annotations

import errno
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from conftest import git, ops

import gitspace
from gitspace import faults
from gitspace.harness import route
from gitspace.harness.events import Call, Event, Options


def _write_call(root: Path, use_id: str, kind: str = "after", rel: str = "a.txt") -> Any:
    path = str(root / rel)
    return route.handle(Event(kind, "claude-code", cwd=str(root), session="s1",
                               call=Call("Write", {"file_path": path}, (path,), use_id)),
                         root, Options())


def test_the_persons_edit_and_the_call_move_the_branch_once(ws: gitspace.Workspace) -> None:
    root = ws.root
    tip = ws.tip()
    (root / "a.txt").write_text("the person's\n")
    _write_call(root, "toolu_1", "before")  # keeps what a.txt holds as the call starts
    (root / "a.txt").write_text("the harness's\n")
    with ExitStack() as stack:
        armed = {p: stack.enter_context(faults.inject(p, times=0))
                 for p in ("journal.write", "ref.update")}
        done = _write_call(root, "toolu_1")
    assert {p: a.hits for p, a in armed.items()} == {"journal.write": 1, "ref.update": 1}
    external, call = ops(root)[-2:]
    assert done.ops == [external.op_id, call.op_id]
    assert (external.source, external.args["paths"]) == ("external", ["a.txt"])
    assert (call.source, call.tool, call.agent, call.session, call.tool_use_id, call.paths) == (
        "harness", "Write", "claude-code", "s1", "toolu_1", ("a.txt",))
    assert git(root, "rev-parse", "HEAD~2").strip() == tip
    assert git(root, "status", "--porcelain") == ""


def test_a_failed_move_leaves_everything_and_the_next_call_records_it(
        ws: gitspace.Workspace) -> None:
    root = ws.root
    tip, index = ws.tip(), (root / ".git" / "index").read_bytes()
    (root / "a.txt").write_text("the harness's\n")
    with faults.inject("index.store", errno.ENOSPC):
        try:
            _write_call(root, "toolu_1")
        except gitspace.GitspaceError as e:
            assert "Nothing was changed" in e.message
        else:
            raise AssertionError("the call was recorded although its index write failed")
    assert ws.tip() == tip and (root / ".git" / "index").read_bytes() == index
    assert (root / "a.txt").read_text() == "the harness's\n"
    (root / "b.txt").write_text("the harness's too\n")
    done = _write_call(root, "toolu_2", rel="b.txt")
    external, call = ops(root)[-2:]  # what the failed call left, caught up first, then this one
    assert external.source == "external" and external.args["paths"] == ["a.txt"]
    assert done.ops == [external.op_id, call.op_id] and call.paths == ("b.txt",)
    assert git(root, "rev-parse", "HEAD~2").strip() == tip
    assert git(root, "status", "--porcelain") == ""
