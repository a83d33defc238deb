"""Every answer of the op index is checked against the ledger before it is believed.

The op index (``.git/gitspace/opindex.sqlite``) is a derived cache another program can damage or
forge. Its op rows were already read back from their commits; its undo rows (which later op
undid this one) are now too: a row naming a position with no op, or an op that undid nothing,
is stale, and the index is rebuilt from the ledger. Each scenario ends sealed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import op_ids
from hostile import cli, sealed, workspace


def _index(root: Path) -> sqlite3.Connection:
    return sqlite3.connect(root / ".git" / "gitspace" / "opindex.sqlite", isolation_level=None)


def _forge(root: Path, make_row: str) -> str:
    """Three ops, the index caught up, then one forged undo row naming the first op."""
    first = op_ids(root)[1]
    db = _index(root)
    try:
        branch, length = db.execute("SELECT branch, length FROM chains").fetchone()
        later = db.execute("SELECT pos FROM ops WHERE branch = ? ORDER BY pos DESC LIMIT 1",
                           (branch,)).fetchone()[0]
        pos = {"no such position": length + 40, "an op that undid nothing": later}[make_row]
        db.execute("INSERT INTO undos VALUES (?, ?, ?)", (branch, pos, first))
    finally:
        db.close()
    return first


@pytest.mark.parametrize("make_row", ["no such position", "an op that undid nothing"])
def test_undo_of_one_op_believes_no_forged_undo_row(tmp_path: Path, make_row: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        for i in range(3):
            assert ws.call("create", {"path": f"f{i}.txt", "file_text": f"{i}\n"}).ok
        assert cli(ws.root, "show", op_ids(ws.root)[1]).returncode == 0  # the index is built
        first = _forge(ws.root, make_row)
        with sealed(ws.root, outside):
            proc = cli(ws.root, "undo", "--op", first)
            assert proc.returncode == 0, proc.stderr
            assert not (ws.root / "f0.txt").exists()
            shown = cli(ws.root, "show", first)
            assert shown.returncode == 0, shown.stderr
            assert cli(ws.root, "undo").returncode == 0  # back to where the scenario began


def test_a_forged_undo_row_never_says_an_op_was_undone(tmp_path: Path) -> None:
    """What ``show`` and the web view say about an op comes from the same checked answer."""
    from gitspace.core import lookup

    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        for i in range(3):
            assert ws.call("create", {"path": f"f{i}.txt", "file_text": f"{i}\n"}).ok
        assert cli(ws.root, "show", op_ids(ws.root)[1]).returncode == 0
        first = _forge(ws.root, "an op that undid nothing")
        with sealed(ws.root, outside):
            found = lookup.on_branch(ws.repo, first)
            assert found is not None and found.undone_by == ()


@pytest.mark.parametrize("sha", ["0" * 40, "../../../../../../etc/passwd", "not hex at all"])
def test_an_op_row_naming_no_commit_is_rebuilt_not_believed(tmp_path: Path, sha: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        for i in range(3):
            assert ws.call("create", {"path": f"f{i}.txt", "file_text": f"{i}\n"}).ok
        first = op_ids(ws.root)[1]
        assert cli(ws.root, "show", first).returncode == 0
        db = _index(ws.root)
        try:
            db.execute("UPDATE ops SET sha = ? WHERE op = ?", (sha, first))
        finally:
            db.close()
        with sealed(ws.root, outside):
            shown = cli(ws.root, "show", first)
            assert shown.returncode == 0 and first in shown.stdout, shown.stderr
            proc = cli(ws.root, "undo", "--op", first)
            assert proc.returncode == 0, proc.stderr
            assert cli(ws.root, "undo").returncode == 0
