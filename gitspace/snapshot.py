"""Committing outside changes: edits made by anything other than a gitspace tool.

Invariant: every pending outside change that git would show (not ignored, under the size cap)
becomes part of one op with source ``external``; files over the cap are reported and left alone,
never committed and never modified. This is the one place that scans the work tree, and it runs
only when asked (``gitspace snapshot``, the watcher), never inside a tool's op.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from . import ledger
from .gitrepo import Entry
from .transaction import _disk_state

if TYPE_CHECKING:
    from .workspace import Result, Workspace


def pending_changes(
    ws: Workspace, *, initial: bool = False
) -> tuple[dict[str, tuple[Entry | None, os.stat_result | None]], list[str]]:
    """Outside changes against the branch tip: {path: (new entry or None, stat)}, skipped notes."""
    tree = None if initial else ws.tree()
    changes: dict[str, tuple[Entry | None, os.stat_result | None]] = {}
    skipped: list[str] = []
    for rel in ws.repo.status_paths():
        path = ws.root / rel
        if os.path.isdir(path) and not os.path.islink(path):
            continue  # a nested repository or an empty folder: git tracks neither
        if os.path.isfile(path) and os.path.getsize(path) > ws.max_file_bytes:
            skipped.append(
                f"{rel} ({os.path.getsize(path):,} bytes, over the {ws.max_file_bytes:,}-byte cap)"
            )
            continue
        stats: dict[str, os.stat_result] = {}
        state = _disk_state(path, stats, rel)
        entry = None if state is None else Entry(state[1], ws.repo.write_blob(state[0]))
        current = None if tree is None else ws.repo.entry_at(tree, rel)
        if entry != current:
            changes[rel] = (entry, stats.get(rel))
    return changes, skipped


def snapshot(ws: Workspace) -> Result:
    from .workspace import Result

    txns = ws.transactions
    with txns.lock():
        txns.recover_locked()
        branch = ws.branch()
        tip = ws.tip()
        changes, skipped = pending_changes(ws)
        note = ""
        if skipped:
            note = "\nNot committed (over the size cap; add them to .gitignore): " + "; ".join(
                skipped
            )
        if not changes:
            return Result(ok=True, text="unchanged: no outside changes to commit." + note,
                          tool="snapshot")
        paths = sorted(changes)
        op = ledger.Op(
            op_id=ledger.new_op_id(),
            tool="external_edit",
            args={"paths": paths[:100], "count": len(paths)},
            source="external",
            agent=ws.external_author,
            session=ws.session,
        )
        tree = ws.repo.update_tree(ws.tree(), {rel: e for rel, (e, _) in changes.items()})
        body = "Files:\n" + "\n".join(ledger.canonical_json(p) for p in paths[:200])
        message = ledger.encode_message(op, f"external edit of {len(paths)} file(s)", body)
        from .gitrepo import Identity
        from .transaction import COMMITTER

        author = Identity(ws.external_author, f"{ws.external_author}@gitspace")
        commit = ws.repo.write_commit(tree, [tip], message, author, COMMITTER)
        ref = f"refs/heads/{branch}"
        txns.journal_write({"ref": ref, "old": tip, "new": commit, "paths": paths})
        try:
            ws.repo.cas_ref(ref, tip, commit, author, "gitspace: snapshot")
        except BaseException:
            txns.journal.unlink(missing_ok=True)
            raise
        known = {rel: st for rel, (_, st) in changes.items() if st is not None}
        txns.sync_index(paths, commit, known)
        txns.journal.unlink(missing_ok=True)
    return Result(ok=True, text=f"Committed outside changes to {len(paths)} file(s)." + note,
                  tool="snapshot", op=op.op_id, commit=commit, changed=paths)
