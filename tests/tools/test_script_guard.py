"""tools/script_guard.py: taking back what a constraint script changed goes through the one
writer (a change of files alone: no ref, no index, no HEAD, no journal), puts back what was on
disk before it ran (not what the tree says), keeps what the script left aside first, and never
touches a path the script did not change.
"""

from __future__ import annotations

from conftest import call_ok, git

import gitspace
from gitspace.tools import script_guard


def test_undo_puts_back_the_disk_as_it_was_through_the_writer(ws: gitspace.Workspace) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "committed\n"})
    (ws.root / "a.txt").write_text("an edit not recorded yet\n")
    (ws.root / "untouched.txt").write_text("the person's\n")
    index, refs = (ws.root / ".git" / "index").read_bytes(), git(ws.root, "for-each-ref")
    before = script_guard.take(ws)
    # What a script does: rewrite a.txt, make new/b.txt.
    (ws.root / "a.txt").write_text("the script's\n")
    (ws.root / "new").mkdir()
    (ws.root / "new" / "b.txt").write_text("made by the script\n")
    found = script_guard.changes(ws, ws.repo.commit(ws.tip()).tree, before)
    assert sorted(c.rel for c in found) == ["a.txt", "new/b.txt"]
    with ws.writer.locked():
        done = script_guard.undo(ws, found)
    assert done.restored == ["a.txt", "new/b.txt"] and done.kept == []
    assert (ws.root / "a.txt").read_text() == "an edit not recorded yet\n"
    assert not (ws.root / "new").exists()  # the folder it left empty is pruned
    assert (ws.root / "untouched.txt").read_text() == "the person's\n"
    assert done.aside is not None and (done.aside / "a.txt").read_text() == "the script's\n"
    assert (ws.root / ".git" / "index").read_bytes() == index
    assert git(ws.root, "for-each-ref") == refs and not ws.writer.journal.exists()
