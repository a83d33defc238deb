"""harness/inplace/gc.py: ``gitspace gc`` deletes the lines it prunes and the turn marks no other line
reaches in one change of the writer, under the checkout's lock: all of them or, when one moved
meanwhile, none. A dry run changes nothing. (What counts as absorbed, with a person's own
commits: tests/harness/test_inplace_git.py.)
"""

from __future__ import annotations

import time

import pytest
from conftest import call_ok, git

import gitspace
from gitspace import faults
from gitspace.core.linerefs import LINES, TURNS
from gitspace.errors import ConcurrentUpdate
from gitspace.harness.inplace import gc as linegc
from gitspace.harness.inplace import line


@pytest.fixture
def lines(ws: gitspace.Workspace) -> tuple[str, str]:
    """Two lines (main's, and other's, off main's history, with a turn mark only it reaches),
    and a turn mark of main's: (main's tip, other's tip)."""
    call_ok(ws, "create", {"path": "a.txt", "file_text": "one\n"})
    tip = ws.tip()
    first = git(ws.root, "commit-tree", "-m", "elsewhere", f"{tip}^{{tree}}").strip()
    with ws.writer.locked():
        line.move(ws.writer, [(LINES + "main", None, tip), (LINES + "other", None, first),
                              (TURNS + "main-turn-1", None, tip),
                              (TURNS + "other-turn-1", None, first)])
    return tip, first


def _refs(ws: gitspace.Workspace) -> str:
    return git(ws.root, "for-each-ref", "--format=%(refname)", "refs/gitspace")


def test_prune_deletes_lines_and_the_marks_they_alone_reach_in_one_change(
        ws: gitspace.Workspace, lines: tuple[str, str]) -> None:
    _, first = lines
    pruned = [linegc.Pruned(LINES + "other", first, "a test")]
    with ws.writer.locked():
        report = linegc.prune(ws.writer, pruned, pack=False)
    assert report.turns == ["other-turn-1"]
    assert _refs(ws).split() == [LINES + "main", TURNS + "main-turn-1"]
    assert not ws.writer.journal.exists()


def test_a_line_that_moved_meanwhile_refuses_the_whole_prune(ws: gitspace.Workspace,
                                                             lines: tuple[str, str]) -> None:
    tip, first = lines
    stale = [linegc.Pruned(LINES + "other", first, "a test"),
             linegc.Pruned(LINES + "main", first, "seen before it moved to tip")]
    before = _refs(ws)
    with ws.writer.locked(), pytest.raises(ConcurrentUpdate):
        linegc.prune(ws.writer, stale, pack=False)
    assert _refs(ws) == before


def test_collect_prunes_under_the_lock_and_a_dry_run_changes_nothing(
        ws: gitspace.Workspace, lines: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    before = _refs(ws)
    later = time.time() + 60  # both lines are older than 0 days by then
    monkeypatch.setattr(time, "time", lambda: later)
    planned, report = linegc.collect(ws.repo, keep_days=0.0, dry_run=True)
    assert sorted(p.ref for p in planned) == [LINES + "main", LINES + "other"]
    assert report is None and _refs(ws) == before
    with faults.inject("journal.write", OSError(28, "No space left on device")), \
            pytest.raises(gitspace.GitspaceError, match="Nothing was changed"):
        linegc.collect(ws.repo, keep_days=0.0)
    assert _refs(ws) == before
    _, report = linegc.collect(ws.repo, keep_days=0.0)
    assert report is not None and sorted(report.turns) == ["main-turn-1", "other-turn-1"]
    assert _refs(ws) == ""
