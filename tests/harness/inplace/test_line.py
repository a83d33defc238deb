"""harness/inplace/line.py: the recorded line's refs move only through the checkout's writer.

``line.move`` hands the writer one change for any number of refs (a line, turn marks): all move
or none does, and a ref someone else moved meanwhile refuses the whole change. ``follow``'s op
record is its identity's (tool ``follow``, source ``external``, the person's token), and
``move_with_files`` writes work-tree files with the line's move, never the index or HEAD.
"""

from __future__ import annotations

import pytest
from conftest import call_ok, git

import gitspace
from gitspace.core import linerefs
from gitspace.errors import ConcurrentUpdate
from gitspace.harness.inplace import line
from gitspace.storage import ledger
from gitspace.storage.objects import FILE_MODE, Signature


@pytest.fixture
def tips(ws: gitspace.Workspace) -> tuple[str, str]:
    first = call_ok(ws, "create", {"path": "a.txt", "file_text": "one\n"}).commit
    assert first is not None
    call_ok(ws, "create", {"path": "a.txt", "file_text": "two\n"})
    return first, ws.tip()


def test_several_refs_move_in_one_change_or_none_does(ws: gitspace.Workspace,
                                                      tips: tuple[str, str]) -> None:
    first, tip = tips
    mark = linerefs.TURNS + "claude-code-s1-turn-1"
    with ws.writer.locked():
        line.move(ws.writer, [(linerefs.LINES + "main", None, first), (mark, None, first)])
    refs = git(ws.root, "for-each-ref", "refs/gitspace")
    assert refs.count(first) == 2
    with ws.writer.locked(), pytest.raises(ConcurrentUpdate):  # the mark is not at tip
        line.move(ws.writer, [(linerefs.LINES + "main", first, tip), (mark, tip, None)])
    assert git(ws.root, "for-each-ref", "refs/gitspace") == refs  # the line did not move either
    with ws.writer.locked():
        line.move(ws.writer, [(linerefs.LINES + "main", first, None), (mark, first, None)])
        line.move(ws.writer, [(linerefs.LINES + "other", None, None)])  # nothing to do: no change
    assert git(ws.root, "for-each-ref", "refs/gitspace") == ""
    assert not ws.writer.journal.exists()


def test_moving_with_files_writes_the_work_tree_alone(ws: gitspace.Workspace,
                                                      tips: tuple[str, str]) -> None:
    first, tip = tips
    index, head = (ws.root / ".git" / "index").read_bytes(), git(ws.root, "rev-parse", "HEAD")
    with ws.writer.locked():
        line.move(ws.writer, [(linerefs.LINES + "main", None, tip)])
        line.move_with_files(ws.writer, linerefs.LINES + "main", tip, first,
                             {"a.txt": (b"one\n", FILE_MODE)}, {"a.txt": (b"two\n", FILE_MODE)})
    assert (ws.root / "a.txt").read_text() == "one\n"
    assert git(ws.root, "rev-parse", linerefs.LINES + "main").strip() == first
    assert (ws.root / ".git" / "index").read_bytes() == index
    assert git(ws.root, "rev-parse", "HEAD") == head


def test_a_follow_op_is_the_persons_record_of_where_they_went(ws: gitspace.Workspace,
                                                              tips: tuple[str, str]) -> None:
    first, tip = tips
    here = line.where(ws.repo)
    assert (here.branch, here.head, here.ref, here.tip) == ("main", tip, linerefs.LINES + "main", None)
    person = Signature("Zoë", "zoe@example.com")
    commit = line.follow(ws.repo, here, ws.repo.commit(first).tree, None, person, "Zoe")
    op = ledger.parse_message(ws.repo.commit(commit).message)
    assert op is not None
    assert (op.tool, op.source, op.agent, op.session) == ("follow", "external", "Zoe", None)
    assert op.args == {"branch": "main", "commit": tip, "count": 1, "paths": ["a.txt"]}
    assert list(ws.repo.commit(commit).parents) == [tip]
    assert line.base_of(ws.repo, commit) == tip
    assert linerefs.ref_for(None, ws.repo.gitdir) == linerefs.DETACHED + "/main"
    assert linerefs.branch_of(linerefs.LINES + "a/b") == "a/b"
    assert linerefs.branch_of(linerefs.DETACHED) is None
