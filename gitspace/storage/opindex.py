"""The op index: where each op of a branch is, and which later ops undid it, without a walk.

Invariant: the index is derived from the ledger and never its second source of truth. It lists,
per branch, the first-parent commits from the root to a tip it has read (their position, commit
and op id) and the ``Gitspace-Undo-Of`` links among them. Before every answer it catches up with
the branch's current tip: only the commits added since the tip it knows are read, when that tip
is a first-parent ancestor of the current one (the ordinary case: ops only append); a branch that
moved back is cut at the tip it moved to; any other move (a rewritten or replaced branch) rebuilds
that branch's list from the ledger. Every op it names is read back from its commit and parsed by
the ledger before it is believed, and an index that fails that check, that SQLite cannot read, or
whose format is not this one is deleted and rebuilt: losing the file loses nothing but time.
Where the file cannot be written at all (a read-only clone), or twice fails its check, the answer
comes from a walk of the branch instead: slower, never different.

The file is ``<common git dir>/gitspace/opindex.sqlite`` (gitspace's own state folder, shared by
every worktree: branches are shared too), written without fsync: it can always be rebuilt.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import LedgerError
from . import ledger
from .gitrepo import Commit, GitRepo

FORMAT = "1"
_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chains (branch TEXT PRIMARY KEY, tip TEXT NOT NULL, length INTEGER NOT NULL);
CREATE TABLE ops (branch TEXT NOT NULL, pos INTEGER NOT NULL, sha TEXT NOT NULL, op TEXT,
                  PRIMARY KEY (branch, pos));
CREATE INDEX ops_by_id ON ops (op, branch);
CREATE TABLE undos (branch TEXT NOT NULL, pos INTEGER NOT NULL, target TEXT NOT NULL);
CREATE INDEX undos_by_target ON undos (target, branch);
"""


@dataclass(frozen=True)
class Located:
    """Op ``op`` at ``commit`` on the branch, and the later ops on it that list it as undone."""

    op: ledger.Op
    commit: Commit
    undone_by: tuple[str, ...]


def locate(repo: GitRepo, branch: str, tip: str, op_id: str) -> Located | None:
    """Where op ``op_id`` is on ``branch`` (at ``tip``), or None when it is not on it."""
    path = index_path(repo)
    for _ in range(2):
        try:
            with _open(path) as db:
                _catch_up(db, repo, branch, tip)
                return _lookup(db, repo, branch, op_id)
        except (sqlite3.DatabaseError, _Stale):
            _discard(path)
        except (OSError, sqlite3.Error):
            break  # a folder gitspace may not write (a read-only clone): answer without it
    return _walked(repo, tip, op_id)  # the answer the index would give, at a walk's cost


def _walked(repo: GitRepo, tip: str, op_id: str) -> Located | None:
    undone_by: list[str] = []
    for commit in repo.walk(tip):
        op = _op_of(commit)
        if op is None:
            continue
        if op.op_id == op_id:
            return Located(op, commit, tuple(reversed(undone_by)))
        if op_id in op.undo_of:
            undone_by.append(op.op_id)
    return None


def index_path(repo: GitRepo) -> Path:
    return repo.commondir / "gitspace" / "opindex.sqlite"


class _Stale(Exception):
    """The index named a commit that does not record what it says: rebuild it."""


@contextmanager
def _open(path: Path) -> Iterator[sqlite3.Connection]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path, timeout=30, isolation_level=None)) as db:
        db.execute("PRAGMA synchronous=OFF")  # a rebuildable cache: no fsync
        row = None
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        except sqlite3.OperationalError:
            pass  # no such table: a new file
        if row is None or row[0] != FORMAT:
            db.execute("BEGIN IMMEDIATE")
            for table in ("meta", "chains", "ops", "undos"):
                db.execute(f"DROP TABLE IF EXISTS {table}")
            db.executescript(_SCHEMA)  # commits the transaction
            db.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
        yield db


def _discard(path: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(f"{path}{suffix}")
        except OSError:
            pass  # gone already, or not a file gitspace can remove: the walk answers then


def _catch_up(db: sqlite3.Connection, repo: GitRepo, branch: str, tip: str) -> None:
    """Make the index's list for ``branch`` end at ``tip``."""
    row = db.execute("SELECT tip, length FROM chains WHERE branch = ?", (branch,)).fetchone()
    if row is not None and row[0] == tip:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute("SELECT tip, length FROM chains WHERE branch = ?", (branch,)).fetchone()
        if row is None or row[0] != tip:
            _extend(db, repo, branch, tip, row)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _extend(db: sqlite3.Connection, repo: GitRepo, branch: str, tip: str,
            known: tuple[str, int] | None) -> None:
    start, commits = 0, None
    if known is not None and repo.has_object(known[0]):
        old, length = known
        newer = repo.log(f"{old}..{tip}")
        if newer and newer[-1].parents and newer[-1].parents[0] == old:
            start, commits = length, newer[::-1]
        elif not newer:  # the branch moved back along its own first parents
            hit = db.execute("SELECT pos FROM ops WHERE branch = ? AND sha = ?",
                             (branch, tip)).fetchone()
            if hit is not None:
                _cut(db, branch, hit[0] + 1)
                db.execute("UPDATE chains SET tip = ?, length = ? WHERE branch = ?",
                           (tip, hit[0] + 1, branch))
                return
    if commits is None:  # new, rewritten or replaced: read the whole branch again
        _cut(db, branch, 0)
        commits = repo.log(tip)[::-1]
    rows, links = [], []
    for pos, commit in enumerate(commits, start):
        op = _op_of(commit)
        rows.append((branch, pos, commit.sha, op.op_id if op else None))
        links += [(branch, pos, target) for target in (op.undo_of if op else ())]
    db.executemany("INSERT INTO ops VALUES (?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO undos VALUES (?, ?, ?)", links)
    db.execute("INSERT OR REPLACE INTO chains VALUES (?, ?, ?)",
               (branch, tip, start + len(commits)))


def _cut(db: sqlite3.Connection, branch: str, keep: int) -> None:
    """Forget the positions of ``branch`` from ``keep`` on."""
    db.execute("DELETE FROM ops WHERE branch = ? AND pos >= ?", (branch, keep))
    db.execute("DELETE FROM undos WHERE branch = ? AND pos >= ?", (branch, keep))


def _lookup(db: sqlite3.Connection, repo: GitRepo, branch: str, op_id: str) -> Located | None:
    # INDEXED BY: without statistics SQLite would pick the (branch, pos) key and scan a branch.
    hits = db.execute("SELECT pos, sha FROM ops INDEXED BY ops_by_id WHERE op = ? AND branch = ?",
                      (op_id, branch)).fetchall()
    if not hits:
        return None
    pos, sha = max(hits)  # an op id twice on a branch ('verify' reports it): the newest
    commit = repo.commit(sha)
    op = _op_of(commit)
    if op is None or op.op_id != op_id:
        raise _Stale(f"{sha} does not record op {op_id}")
    later = db.execute("SELECT pos FROM undos INDEXED BY undos_by_target WHERE target = ? AND "
                       "branch = ? AND pos > ?", (op_id, branch, pos)).fetchall()
    undone_by = [db.execute("SELECT op FROM ops WHERE branch = ? AND pos = ?", (branch, at))
                 .fetchone()[0] for (at,) in later]
    return Located(op, commit, tuple(undone_by))


def _op_of(commit: Commit) -> ledger.Op | None:
    try:
        return ledger.parse_message(commit.message)
    except LedgerError:
        return None  # a malformed block records no op ('gitspace verify' reports it)
