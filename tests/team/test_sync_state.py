"""team/sync_state.py: what a sync keeps between its steps.

The remote-tracking ref moves after a push as a change of the writer of that ref alone, and one
someone else moved meanwhile is left where they put it (with a note). The sync lock is a lock of
its own: a sync holding it blocks another sync, never an op. A malformed pace file starts
afresh; a killed sync's scratch folder is cleared by the next.
"""

from __future__ import annotations

from conftest import call_ok, git

import gitspace
from gitspace import faults
from gitspace.errors import LockTimeout
from gitspace.team import sync_state


def test_the_tracking_ref_moves_alone_and_never_over_someone_elses_move(
        ws: gitspace.Workspace) -> None:
    first = ws.tip()
    call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    ref = sync_state.tracking_ref("origin", "main")
    assert sync_state.move_tracking(ws, ref, first) == []
    assert git(ws.root, "rev-parse", ref).strip() == first
    assert git(ws.root, "rev-parse", "main").strip() == ws.tip()  # nothing else moved
    assert sync_state.move_tracking(ws, ref, first) == []  # already there: no change

    second = ws.tip()
    call_ok(ws, "create", {"path": "b.txt", "file_text": "b\n"})
    third = ws.tip()
    # Someone else's fetch moves the ref right after the sync read it (the change's journal).
    with faults.inject("journal.write", lambda: git(ws.root, "update-ref", ref, third)):
        notes = sync_state.move_tracking(ws, ref, second)
    assert len(notes) == 1 and "moved by someone else meanwhile" in notes[0]
    assert git(ws.root, "rev-parse", ref).strip() == third


def test_the_sync_lock_blocks_a_sync_never_an_op(ws: gitspace.Workspace) -> None:
    with sync_state.lock(ws):
        try:
            with sync_state.lock(ws, timeout=0.05):
                raise AssertionError("two syncs held the lock at once")
        except LockTimeout as e:
            assert "Another sync" in e.message
        call_ok(ws, "create", {"path": "a.txt", "file_text": "an op meanwhile\n"})


def test_a_malformed_pace_starts_afresh_and_scratch_is_cleared(ws: gitspace.Workspace) -> None:
    (ws.root / ".git" / "gitspace" / sync_state.PACE).write_text("{not json")
    fresh = sync_state.load_pace(ws, "origin", "main")
    sync_state.save_pace(ws, "origin", "main", fresh)
    assert sync_state.load_pace(ws, "origin", "main") == fresh
    left = sync_state.scratch_folder(ws) / "killed-rebase"
    (left / "objects").mkdir(parents=True)
    sync_state.clear_scratch(ws)
    assert list(sync_state.scratch_folder(ws).iterdir()) == []
