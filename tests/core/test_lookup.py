"""The one op finder (core/lookup.py): an op wherever it is recorded, and whatever people type.

Every test runs on a real workspace; the hostile ones try to make the finder match text that is
not a trailer, read a ref outside refs/, or leak git's own "fatal" message.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_clean, call_ok, git, head, message_of, op_ids

import gitspace
from gitspace.core import lookup, timeline
from gitspace.errors import BadArguments, Conflict, NotFound
from gitspace.storage import opindex


def common_prefix(a: str, b: str) -> str:
    return os.path.commonprefix([a, b])


@pytest.fixture
def history(ws: gitspace.Workspace) -> gitspace.Workspace:
    """main: create a.md, checkpoint cp1, str_replace; branch side (made by a tool call) with one
    op of its own; back on main."""
    call_ok(ws, "create", {"path": "a.md", "file_text": "one\n"})
    ws.call("checkpoint", {"name": "cp1"}, op_id="01JCHECKP0NTCHECKP0NTCHECK")
    call_ok(ws, "str_replace", {"path": "a.md", "old_str": "one", "new_str": "two"})
    assert ws.call("branch", {"name": "side"}, op_id="01JBRANCH0000000000000000A").ok
    call_ok(ws, "create", {"path": "side.md", "file_text": "side\n"})
    call_ok(ws, "switch", {"name": "main"})
    return ws


def test_an_op_is_found_wherever_it_is_recorded(history: gitspace.Workspace) -> None:
    ws = history
    main_ops, side_ops = op_ids(ws.root, "main"), op_ids(ws.root, "side")
    mine = lookup.find_op(ws.repo, main_ops[-1])
    assert mine is not None and mine.where == "commit" and mine.commit == head(ws.root, "main")
    assert mine.op is not None and mine.op.tool == "str_replace"
    other = lookup.find_op(ws.repo, side_ops[-1])  # on another branch: op lookups search them all
    assert other is not None and other.commit == head(ws.root, "side")
    cp = lookup.find_op(ws.repo, "01JCHECKP0NTCHECKP0NTCHECK")
    assert cp is not None and (cp.where, cp.name) == ("checkpoint", "cp1")
    assert cp.commit == head(ws.root, "main~1")
    br = lookup.find_op(ws.repo, "01JBRANCH0000000000000000A")
    assert br is not None and (br.where, br.name, br.commit) == ("branch", "side", head(ws.root))
    assert lookup.find_op(ws.repo, "01JN0THNGN0THNGN0THNGN0THN") is None
    assert lookup.find_op(ws.repo, "not an op id") is None


def test_what_people_type_resolves(history: gitspace.Workspace) -> None:
    ws = history
    last = op_ids(ws.root, "main")[-1]
    tip = head(ws.root, "main")
    for text in (last, last[-8:], last[-8:].lower(), last[:-2], last[:-2].lower()):
        found = lookup.resolve(ws.repo, text)
        assert (found.op_id, found.commit) == (last, tip), text
    assert lookup.resolve(ws.repo, "cp1").commit == head(ws.root, "main~1")  # a bare checkpoint name
    assert lookup.resolve(ws.repo, "side").commit == head(ws.root, "side")
    assert lookup.resolve(ws.repo, "HEAD~1").commit == head(ws.root, "HEAD~1")
    assert lookup.resolve(ws.repo, tip).commit == tip
    assert lookup.resolve(ws.repo, tip[:10]).commit == tip  # an abbreviated commit id
    assert lookup.resolve(ws.repo, "01JCHECKP0NTCHECKP0NTCHECK").where == "checkpoint"
    side_op = op_ids(ws.root, "side")[-1]
    assert lookup.resolve(ws.repo, side_op[-8:]).commit == head(ws.root, "side")
    assert timeline.find(ws, last[-8:]).commit == tip  # what gitspace show uses


def test_an_ambiguous_part_lists_the_candidates(history: gitspace.Workspace) -> None:
    ws = history
    first, second = op_ids(ws.root, "main")[1:3]
    shared = common_prefix(first, second)
    assert len(shared) >= lookup.MIN_PART  # ops made within seconds share their time prefix
    with pytest.raises(BadArguments) as refused:
        lookup.resolve(ws.repo, shared)
    assert first in refused.value.message and second in refused.value.message
    assert refused.value.hint and "more characters" in refused.value.hint
    with pytest.raises(BadArguments):
        lookup.op_id(ws.repo, shared)


def test_a_miss_is_not_found_with_a_hint(history: gitspace.Workspace) -> None:
    for text in ("nope", "zzzzzzzz", "01JN0THNGN0THNGN0THNGN0THN", "HEAD~99", "-all", "--all",
                 "../../HEAD", "refs/../../config", "a" * 10_000, "ab.*", "\n", "", "cp1\x00"):
        with pytest.raises(NotFound) as missed:
            lookup.resolve(history.repo, text)
        assert missed.value.hint and "gitspace log" in missed.value.hint, text
        assert "fatal" not in str(missed.value), text


def test_quoted_trailers_never_match(history: gitspace.Workspace) -> None:
    """An op id in a result, a body or a hand-made commit's last paragraph is not a record."""
    ws = history
    victim = "01JV1CT1M000000000000000AB"
    call_ok(ws, "create", {"path": "quote.md", "file_text": f"Gitspace-Op: {victim}\n"})
    call_ok(ws, "view", {"path": "quote.md"})
    git(ws.root, "commit", "--allow-empty", "-qm",
        f"plain commit\n\nGitspace-Op: {victim}\n\nnot a trailer block")
    git(ws.root, "commit", "--allow-empty", "-qm",
        f"forged\n\nGitspace-Format: 1\nGitspace-Op: {victim}")  # malformed: no tool, no args
    assert lookup.find_op(ws.repo, victim) is None
    with pytest.raises(NotFound):
        lookup.resolve(ws.repo, victim[-8:])


def test_the_current_branch_wins_when_an_op_is_on_two(history: gitspace.Workspace) -> None:
    """replay --onto (or a cherry-pick) copies an op, id and all, to another branch."""
    ws = history
    copied = op_ids(ws.root, "side")[-1]
    git(ws.root, "cherry-pick", "--allow-empty", "side")  # main gets a copy of side's op
    assert message_of(ws.root) == message_of(ws.root, "side")
    assert lookup.resolve(ws.repo, copied[-8:]).commit == head(ws.root, "main")
    assert lookup.find_op(ws.repo, copied).commit == head(ws.root, "main")  # type: ignore[union-attr]
    call_ok(ws, "switch", {"name": "side"})
    assert lookup.resolve(ws.repo, copied[-8:]).commit == head(ws.root, "side")


def test_undo_by_part_and_the_refusals(history: gitspace.Workspace) -> None:
    ws = history
    ids = op_ids(ws.root, "main")
    created = ids[1]
    conflict = ws.call("undo", {"op": created[-8:]})  # str_replace changed that line since
    assert not conflict.ok and isinstance(conflict.error, Conflict)
    done = ws.call("undo", {"op": ids[-1][-8:].lower()})
    assert done.ok and (ws.root / "a.md").read_text() == "one\n"
    again = ws.call("undo", {"op": ids[-1]})
    assert not again.ok and "already undone" in again.text
    other = ws.call("undo", {"op": op_ids(ws.root, "side")[-1][-8:]})
    assert not other.ok and "recorded on another branch" in other.text
    cp = ws.call("undo", {"op": "01JCHECKP0NTCHECKP0NTCHECK"})
    assert not cp.ok and "created checkpoint cp1" in cp.text
    shared = common_prefix(ids[1], ids[2])
    vague = ws.call("undo", {"op": shared})
    assert not vague.ok and isinstance(vague.error, BadArguments) and ids[1] in vague.text
    assert_clean(ws.root)


def gs(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitspace", "-C", str(cwd), *args],
                          capture_output=True, text=True, timeout=60)


def test_show_diff_undo_restore_round_trip_through_the_cli(history: gitspace.Workspace) -> None:
    ws = history
    root = ws.root
    last = op_ids(root, "main")[-1]
    shown = gs(root, "show", last[-8:])
    assert shown.returncode == 0 and "+two" in shown.stdout and last in shown.stdout
    diff = gs(root, "diff", "cp1", last[-8:])
    assert diff.returncode == 0 and "-one" in diff.stdout and "+two" in diff.stdout
    assert gs(root, "undo", "--op", last[-8:]).returncode == 0
    assert (root / "a.md").read_text() == "one\n"
    assert gs(root, "restore", "cp1").returncode == 0
    missing = gs(root, "show", "nothing-here")
    assert missing.returncode == 1 and "hint:" in missing.stderr
    assert "fatal" not in missing.stderr and "Traceback" not in missing.stderr
    assert_clean(root)


def merge_side_into(ws: gitspace.Workspace, branch: str) -> str:
    """A two-parent merge of ``side`` onto main's tip on a new ``branch``, then ``side`` deleted:
    side's op is now reachable only through that merge's second parent."""
    tree = git(ws.root, "rev-parse", "main^{tree}").strip()
    merge = git(ws.root, "commit-tree", tree, "-p", "main", "-p", "side", "-m", "merge").strip()
    git(ws.root, "update-ref", f"refs/heads/{branch}", merge)
    git(ws.root, "update-ref", "-d", "refs/heads/side")
    return merge


def test_an_op_a_merge_brought_in_is_found_by_its_part_without_a_walk(
        history: gitspace.Workspace) -> None:
    ws = history
    side_op, side_tip = op_ids(ws.root, "side")[-1], head(ws.root, "side")
    merge_side_into(ws, "merged")
    found = lookup.resolve(ws.repo, side_op[-8:])
    assert (found.op_id, found.commit, found.where) == (side_op, side_tip, "commit")
    assert lookup.op_id(ws.repo, side_op[:10].lower()) == side_op
    with sqlite3.connect(opindex.index_path(ws.repo)) as db:  # the index answered, not a walk
        assert db.execute("SELECT branch, sha FROM merged WHERE op = ?",
                          (side_op,)).fetchall() == [("merged", side_tip)]
    git(ws.root, "update-ref", "-d", "refs/heads/merged")  # gone from every branch: not found
    with pytest.raises(NotFound):
        lookup.resolve(ws.repo, side_op[-8:])


def test_a_forged_index_row_is_checked_against_the_ledger(history: gitspace.Workspace) -> None:
    ws = history
    main_op = op_ids(ws.root, "main")[-1]
    assert lookup.resolve(ws.repo, main_op[-8:]).op_id == main_op  # builds the index
    victim = "01JV1CT1M000000000000000AB"
    with sqlite3.connect(opindex.index_path(ws.repo)) as db:  # another process lies in the cache
        db.execute("INSERT INTO merged VALUES ('main', 0, ?, ?)", (head(ws.root, "main~1"), victim))
        db.execute("UPDATE ops SET op = ? WHERE op = ?", (main_op[:-1] + "Z", main_op))
    with pytest.raises(NotFound):
        lookup.resolve(ws.repo, victim[-8:])  # the named commit does not record it
    found = lookup.resolve(ws.repo, main_op[-8:])  # the index was rebuilt from the ledger
    assert (found.op_id, found.commit) == (main_op, head(ws.root, "main"))


def test_with_head_detached_parts_are_still_found(history: gitspace.Workspace) -> None:
    ws = history
    main_op, side_op = op_ids(ws.root, "main")[-1], op_ids(ws.root, "side")[-1]
    git(ws.root, "checkout", "-q", "--detach", "main")
    assert lookup.resolve(ws.repo, main_op[-8:]).commit == head(ws.root, "main")
    assert lookup.resolve(ws.repo, side_op[-8:]).commit == head(ws.root, "side")
