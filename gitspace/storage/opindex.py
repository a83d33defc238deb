"""The op index: where each op of a branch is, and which later ops undid it, without a walk.

Invariant: the index is derived from the ledger and never its second source of truth. It lists, per
branch, the first-parent commits from the root to a tip it has read (their position, commit and op
id), the ``Gitspace-Undo-Of`` links among them, and the op commits each merge on that line brought
in (the second parents' side, which a first-parent list alone would never name). Before every
answer it catches up with the branch's current tip: only the commits added since the tip it knows
are read, when that tip is a first-parent ancestor of the current one (the ordinary case: ops only
append); a branch that moved back is cut at the tip it moved to; any other move (a rewritten or
replaced branch) rebuilds that branch's list from the ledger. Every op it names is read back from
its commit and parsed by the ledger before it is believed (an op said to undo another must record
that undo), and an index that fails that check, that
SQLite cannot read, or whose format is not this one is deleted and rebuilt: losing the file loses
nothing but time. Where the file cannot be written at all (a read-only clone), or twice fails its
check, the answer comes from a walk of the branch instead: slower, never different.

The file is ``<common git dir>/gitspace/opindex.sqlite`` (gitspace's own state folder, shared by
every worktree: branches are shared too), written without fsync: it can always be rebuilt. It is
never opened through a link: a link (or anything but a regular file) at its name or its journal's
is left where it is, and a walk answers instead.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat as statmod
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from ..errors import LedgerError, NotFound
from . import ledger, statefiles
from .gitrepo import GitRepo
from .objects import Commit
from .records import record

TYPE_CHECKING = False  # typing is not imported at run time: a read of the CLI starts without it
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")

FORMAT = "2"
_SHA = re.compile(r"[0-9a-f]{40}")
_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chains (branch TEXT PRIMARY KEY, tip TEXT NOT NULL, length INTEGER NOT NULL);
CREATE TABLE ops (branch TEXT NOT NULL, pos INTEGER NOT NULL, sha TEXT NOT NULL, op TEXT,
                  pi TEXT, PRIMARY KEY (branch, pos));
CREATE INDEX ops_by_id ON ops (op, branch);
CREATE INDEX ops_by_reversed_id ON ops (pi, branch);
CREATE TABLE undos (branch TEXT NOT NULL, pos INTEGER NOT NULL, target TEXT NOT NULL);
CREATE INDEX undos_by_target ON undos (target, branch);
CREATE TABLE merged (branch TEXT NOT NULL, pos INTEGER NOT NULL, sha TEXT NOT NULL, op TEXT NOT NULL);
CREATE INDEX merged_by_branch ON merged (branch, pos);
"""
_TABLES = ("meta", "chains", "ops", "undos", "merged")


@record(frozen=True)
class Located:
    """Op ``op`` at ``commit`` on the branch, and the later ops on it that list it as undone."""

    op: ledger.Op
    commit: Commit
    undone_by: tuple[str, ...]


@record(frozen=True)
class Hit:
    """Op ``op`` recorded at ``commit``, on the history of ``branch``."""

    branch: str
    op: ledger.Op
    commit: Commit


def locate(repo: GitRepo, branch: str, tip: str, op_id: str) -> Located | None:
    """Where op ``op_id`` is on ``branch`` (at ``tip``), or None when it is not on it."""
    try:
        return _asked(repo, {branch: tip}, lambda db: _lookup(db, repo, branch, op_id))
    except _NoIndex:
        return _walked(repo, tip, op_id)  # the answer the index would give, at a walk's cost


def search(repo: GitRepo, tips: dict[str, str], part: str, exact: bool) -> list[Hit] | None:
    """Every op on the histories of ``tips`` (branch: tip) whose id is ``part`` (``exact``) or
    starts or ends with it: the ops of each branch's first-parent line and those its merges
    brought in, newest first per branch, in the order of ``tips``. Each is read back from its
    commit and checked before it is returned. None when the index cannot answer (the caller then
    searches the history itself)."""
    try:
        return _asked(repo, tips, lambda db: [
            hit for branch in tips for hit in _matches(db, repo, branch, part, exact)])
    except _NoIndex:
        return None


class _NoIndex(Exception):
    """No index to be had here: the caller answers from the history itself."""


def _asked(repo: GitRepo, tips: dict[str, str], answer: Callable[[sqlite3.Connection], T]) -> T:
    """``answer`` from the index once it has caught up with ``tips`` (branch: tip). An index
    SQLite cannot read, or one that named a commit not recording what it said, is deleted and
    built again once; a folder gitspace may not write (a read-only clone) raises _NoIndex."""
    path = index_path(repo)
    for _ in range(2):
        try:
            with _open(path) as db:
                for branch, tip in tips.items():
                    _catch_up(db, repo, branch, tip)
                return answer(db)
        except (sqlite3.DatabaseError, _Stale):
            _discard(path)
        except (OSError, sqlite3.Error):
            break
    raise _NoIndex


def _matches(db: sqlite3.Connection, repo: GitRepo, branch: str, part: str,
             exact: bool) -> list[Hit]:
    # Op ids are Crockford base32 (no GLOB metacharacters); a suffix is a prefix of the reversed
    # id, so each query is a range of one index, whatever the branch's length.
    queries: list[tuple[str, tuple[str, ...]]]
    if exact:
        queries = [("SELECT pos, sha, op FROM ops INDEXED BY ops_by_id WHERE op = ? AND branch = ?",
                    (part, branch))]
    else:
        queries = [
            ("SELECT pos, sha, op FROM ops INDEXED BY ops_by_id WHERE op GLOB ? AND branch = ?",
             (part + "*", branch)),
            ("SELECT pos, sha, op FROM ops INDEXED BY ops_by_reversed_id WHERE pi GLOB ? AND "
             "branch = ?", (part[::-1] + "*", branch))]
    queries.append(("SELECT pos, sha, op FROM merged WHERE branch = ? AND (op GLOB ? OR op GLOB ?)",
                    (branch, part if exact else part + "*", part if exact else "*" + part)))
    rows = sorted({row for sql, args in queries for row in db.execute(sql, args)}, reverse=True)
    found, seen = [], set()
    for _, sha, op_id in rows:
        if sha in seen:
            continue
        seen.add(sha)
        commit = _commit(repo, sha)
        op = _op_of(commit)
        if op is None or op.op_id != op_id:
            raise _Stale(f"{sha} does not record op {op_id}")
        found.append(Hit(branch, op, commit))
    return found


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
    statefiles.folder(path.parent.parent, path.parent.name)  # a real folder, never a link
    for suffix in ("", "-journal", "-wal", "-shm"):
        # SQLite follows a link at the database's name (and keeps its journal beside the
        # target): what stands there and is no regular file is left alone, and a walk answers.
        try:
            if not statmod.S_ISREG(os.lstat(f"{path}{suffix}").st_mode):
                raise _NoIndex
        except FileNotFoundError:
            pass
    with closing(sqlite3.connect(path, timeout=30, isolation_level=None)) as db:
        db.execute("PRAGMA synchronous=OFF")  # a rebuildable cache: no fsync
        if _format(db) != FORMAT:
            # One transaction, checked again under its lock: a reader beside this one sees the
            # old tables or the new ones, never none (which it would take for damage).
            db.execute("BEGIN IMMEDIATE")
            try:
                if _format(db) != FORMAT:
                    for table in _TABLES:
                        db.execute(f"DROP TABLE IF EXISTS {table}")
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            db.execute(statement)
                    db.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        yield db


def _format(db: sqlite3.Connection) -> str | None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    except sqlite3.OperationalError:
        return None  # no such table: a new file
    return str(row[0]) if row is not None else None


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
    if known is not None and isinstance(known[0], str) and _SHA.fullmatch(known[0]) \
            and repo.has_object(known[0]):
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
    rows, links, merged = [], [], []
    for pos, commit in enumerate(commits, start):
        op = _op_of(commit)
        rows.append((branch, pos, commit.sha, op.op_id if op else None,
                     op.op_id[::-1] if op else None))
        links += [(branch, pos, target) for target in (op.undo_of if op else ())]
        merged += [(branch, pos, sha, op_id) for sha, op_id in _brought_in(repo, commit)]
    db.executemany("INSERT INTO ops VALUES (?, ?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO undos VALUES (?, ?, ?)", links)
    db.executemany("INSERT INTO merged VALUES (?, ?, ?, ?)", merged)
    db.execute("INSERT OR REPLACE INTO chains VALUES (?, ?, ?)",
               (branch, tip, start + len(commits)))


def _brought_in(repo: GitRepo, commit: Commit) -> list[tuple[str, str]]:
    """(commit, op id) of the ops a merge ``commit`` brought in: those reachable from its other
    parents and not from its first."""
    out: dict[str, str] = {}
    for parent in commit.parents[1:]:
        for brought in repo.log(f"{commit.parents[0]}..{parent}", first_parent=False):
            op = _op_of(brought)
            if op is not None:
                out.setdefault(brought.sha, op.op_id)
    return list(out.items())


def _cut(db: sqlite3.Connection, branch: str, keep: int) -> None:
    """Forget the positions of ``branch`` from ``keep`` on."""
    for table in ("ops", "undos", "merged"):
        db.execute(f"DELETE FROM {table} WHERE branch = ? AND pos >= ?", (branch, keep))


def _lookup(db: sqlite3.Connection, repo: GitRepo, branch: str, op_id: str) -> Located | None:
    # INDEXED BY: without statistics SQLite would pick the (branch, pos) key and scan a branch.
    hits = db.execute("SELECT pos, sha FROM ops INDEXED BY ops_by_id WHERE op = ? AND branch = ?",
                      (op_id, branch)).fetchall()
    if not hits:
        return None
    pos, sha = max(hits)  # an op id twice on a branch ('verify' reports it): the newest
    commit = _commit(repo, sha)
    op = _op_of(commit)
    if op is None or op.op_id != op_id:
        raise _Stale(f"{sha} does not record op {op_id}")
    later = db.execute("SELECT pos FROM undos INDEXED BY undos_by_target WHERE target = ? AND "
                       "branch = ? AND pos > ?", (op_id, branch, pos)).fetchall()
    return Located(op, commit, tuple(_undoer(db, repo, branch, at, op_id) for (at,) in later))


def _undoer(db: sqlite3.Connection, repo: GitRepo, branch: str, pos: int, target: str) -> str:
    """The op at ``pos`` that an undo row says undid ``target``, read back from its commit: a
    row naming no op there, or an op that undid nothing of the kind, is stale."""
    row = db.execute("SELECT sha, op FROM ops WHERE branch = ? AND pos = ?", (branch, pos)
                     ).fetchone()
    op = _op_of(_commit(repo, row[0])) if row is not None and row[1] else None
    if op is None or op.op_id != row[1] or target not in op.undo_of:
        raise _Stale(f"the undo row at {branch}:{pos} names no undo of {target}")
    return op.op_id


def _commit(repo: GitRepo, sha: object) -> Commit:
    """The commit a row names; a name that is no commit id, or no commit here, is stale."""
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise _Stale(f"{sha!r} is no commit id")
    try:
        return repo.commit(sha)
    except NotFound:
        raise _Stale(f"{sha} is no commit here") from None


def _op_of(commit: Commit) -> ledger.Op | None:
    try:
        return ledger.parse_message(commit.message)
    except LedgerError:
        return None  # a malformed block records no op ('gitspace verify' reports it)
