"""The tree of calls: sessions that delegated to sessions, and how deep each op was made.

Invariant: the tree is read from what is recorded, never from a running process: a session's
parent from its file (``parent_session``), an op's from its trailers (``Gitspace-Parent-*``,
which travel with clones). A parent no record names counts as the top (depth 0), so an op whose
chain is only partly known here is shown no deeper than what is known.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import GitspaceError
from ..storage import ledger
from .session import Session

MAX_DEPTH = 64  # a chain longer than this is a loop in hostile records, not a call tree


def ordered(sessions: Iterable[Session]) -> list[tuple[Session, int]]:
    """Every session with its depth, each followed by the sessions it delegated to (oldest
    first at every level): the tree, read top to bottom."""
    found = list(sessions)
    ids = {s.id for s in found}
    children: dict[str | None, list[Session]] = {}
    for s in sorted(found, key=lambda s: (_number(s.created), s.id)):
        parent = parent_of(s)
        children.setdefault(parent if parent in ids and parent != s.id else None, []).append(s)
    out: list[tuple[Session, int]] = []
    stack = [(s, 0) for s in reversed(children.get(None, []))]
    seen: set[str] = set()
    while stack:
        s, depth = stack.pop()
        if s.id in seen:
            continue
        seen.add(s.id)
        out.append((s, depth))
        stack += [(c, depth + 1) for c in reversed(children.get(s.id, []))]
    out += [(s, 0) for s in found if s.id not in seen]  # a loop of parents: shown flat
    return out


def depths(ops: Iterable[ledger.Op | None],
           parent_of: Callable[[str], str | None] = lambda session: None) -> dict[str, int]:
    """How many delegated calls deep each op's session ran, by op id. A session's parent is
    what an op of it names, else ``parent_of(session)`` (a saved session file, when there is
    one)."""
    parents: dict[str, str | None] = {}
    listed = [op for op in ops if op is not None]
    for op in listed:
        if op.session and op.parent_session:
            parents.setdefault(op.session, op.parent_session)

    def parent(session: str) -> str | None:
        if session not in parents:
            parents[session] = parent_of(session)
        return parents[session]

    out = {}
    for op in listed:
        depth, at = 0, op.session
        while at is not None and depth < MAX_DEPTH:
            at = parent(at)
            depth += at is not None
        out[op.op_id] = depth
    return out


def saved_parent(root: Path) -> Callable[[str], str | None]:
    """``parent_of`` for ``depths``: the parent a saved session file in ``root`` names."""
    def from_file(session: str) -> str | None:
        if not ledger.OP_ID.fullmatch(session):  # session ids are ULIDs; a trailer is untrusted
            return None
        try:
            return parent_of(Session.load(root, session))
        except (GitspaceError, OSError):  # a missing or damaged file names no parent
            return None
    return from_file


def parent_of(session: Session) -> str | None:
    """The session that delegated ``session``, as its file says (a malformed value: none)."""
    found = session.parent_session
    return found if isinstance(found, str) and ledger.OP_ID.fullmatch(found) else None


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
