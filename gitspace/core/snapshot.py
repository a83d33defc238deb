"""Committing outside changes: edits made by anything other than a gitspace tool.

Invariant: every pending outside change that git would show (not ignored, under the size cap)
becomes part of one op with source ``external``; files over the cap are reported and left alone,
never committed and never modified. This is the one place that scans the work tree, and it runs
only when asked (``gitspace snapshot``, the watcher), never inside a tool's op.
"""

from __future__ import annotations

import os

from ..errors import FileRefused
from ..storage.gitrepo import Entry
from .result import Result
from .transaction import Host, disk_state, entry_of


def pending_changes(
    ws: Host, *, initial: bool = False, write: bool = False
) -> tuple[dict[str, tuple[Entry | None, os.stat_result | None]], list[str]]:
    """Outside changes against the branch tip: {path: (new entry or None, stat)}, skipped notes.

    Blobs are stored only with ``write`` (to commit them); otherwise this only reads.
    """
    tree = None if initial else ws.tree()
    changes: dict[str, tuple[Entry | None, os.stat_result | None]] = {}
    skipped: list[str] = []
    for rel in ws.repo.status_paths():
        path = ws.root / rel
        if os.path.isdir(path) and not os.path.islink(path):
            continue  # a nested repository or an empty folder: git tracks neither
        stats: dict[str, os.stat_result] = {}
        try:
            state = disk_state(path, stats, rel, limit=ws.max_file_bytes)
        except FileRefused:
            skipped.append(f"{rel} ({stats[rel].st_size:,} bytes, over the "
                           f"{ws.max_file_bytes:,}-byte cap)")
            continue
        entry = entry_of(ws.repo, state, write=write)
        current = None if tree is None else ws.repo.entry_at(tree, rel)
        if entry != current:
            changes[rel] = (entry, stats.get(rel))
    return changes, skipped


def snapshot(ws: Host) -> Result:
    txns = ws.transactions
    with txns.lock():
        txns.recover_locked()
        branch, tip, tree = ws.branch(), ws.tip(), ws.tree()
        changes, skipped = pending_changes(ws, write=True)
        note = ""
        if skipped:
            note = "\nNot committed (over the size cap; add them to .gitignore): " + "; ".join(
                skipped
            )
        if not changes:
            return Result(ok=True, text="unchanged: no outside changes to commit." + note,
                          tool="snapshot")
        commit, _, op_id = txns.commit_external(
            tip, tree, {rel: e for rel, (e, _) in changes.items()}, "Recorded by snapshot.")
        known = {rel: st for rel, (_, st) in changes.items() if st is not None}
        before = {rel: None for rel in changes}  # nothing is written, so nothing to roll back
        txns.publish(branch, tip, commit, {}, before, known, ws.external_identity, "snapshot")
    return Result(ok=True, text=f"Committed outside changes to {len(changes)} file(s)." + note,
                  tool="snapshot", op=op_id, commit=commit, changed=sorted(changes))
