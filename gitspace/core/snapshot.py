"""Committing outside changes: edits made by anything other than a gitspace tool.

Invariant: every pending outside change that git would show (not ignored, under the size cap)
becomes part of one op with source ``external``; files over the cap, paths the person excluded
(``exclude.py``), and paths the path policy
refuses to commit (names git treats as ``.git``, anything under ``.gitspace/``, content ``git fsck``
rejects: see paths.py), are reported and left alone, never committed and never modified. This
is the one place that scans the work tree, and it runs only when asked (``gitspace snapshot``,
the watcher), never inside a tool's op.
"""

from __future__ import annotations

import os

from ..errors import FileRefused, PathRefused
from . import exclude

# What a reader of pending changes imports stays small (``status`` is one: core/view.py): the
# op's transaction, the writer and the path policy come in where a change is committed or a
# pending path is checked.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    from ..storage.files import Files
    from ..storage.gitrepo import GitRepo
    from ..storage.objects import Entry
    from .result import Result
    from .transaction import Host

    class Scanned(Protocol):
        """What ``pending_changes`` reads (a ``Workspace`` or a ``view.View``)."""

        repo: GitRepo
        files: Files
        max_file_bytes: int


def pending_changes(
    ws: Scanned, *, initial: bool = False, write: bool = False
) -> tuple[dict[str, tuple[Entry | None, os.stat_result | None]], list[str]]:
    """Outside changes against the branch tip: {path: (new entry or None, stat)}, skipped notes.

    Blobs are stored only with ``write`` (to commit them); otherwise this only reads.
    """
    changes: dict[str, tuple[Entry | None, os.stat_result | None]] = {}
    skipped: list[str] = []
    pending = ws.repo.status_paths()
    if not pending:
        return changes, skipped
    from . import paths
    from .transaction import entry_of

    excluded = exclude.load(ws.repo.commondir)
    # HEAD, not the branch: a detached checkout (CI) reads too. Read only when something is
    # pending, so a clean 'gitspace status' reads no object at all.
    head = None if initial else ws.repo.read_ref("HEAD")
    tree = None if head is None else ws.repo.commit(head).tree
    for listed in pending:
        # "sub/": an untracked folder (a nested repository). As a file path it is absent, which
        # records a deletion when a file of that name is tracked (a file became a folder).
        rel = listed.rstrip("/")
        if excluded and excluded.match(rel):
            skipped.append(f"{rel} (excluded from recording: gitspace exclude)")
            continue
        stats: dict[str, os.stat_result] = {}
        try:
            state = ws.files.read(rel, limit=ws.max_file_bytes, stats=stats)
        except (FileRefused, PathRefused) as e:
            st = stats.get(rel)
            too_large = st is not None and st.st_size > ws.max_file_bytes
            skipped.append(f"{rel} ({st.st_size:,} bytes, over the {ws.max_file_bytes:,}-byte "
                           "cap)" if st is not None and too_large else f"{rel} ({e.message})")
            continue
        why = None if state is None else (paths.history_refusal(rel, state[1])
                                          or paths.content_refusal(rel, state[0]))
        if why is not None:
            skipped.append(f"{rel} ({why})")
            continue
        entry = entry_of(ws.repo, state, write=write)
        current = None if tree is None else ws.repo.entry_at(tree, rel)
        if current is not None and current.is_tree:
            current = None  # a folder: no file of that name, as on disk
        if entry != current:
            changes[rel] = (entry, stats.get(rel))
    return changes, skipped


def snapshot(ws: Host, message: str | None = None) -> Result:
    """Commit every pending outside change as one external op (``message``: its subject line,
    instead of "external edit of ...")."""
    from .result import Result
    from .transaction import commit_external

    with ws.writer.locked():
        branch, tip, tree = ws.branch(), ws.tip(), ws.tree()
        changes, skipped = pending_changes(ws, write=True)
        note = ""
        if skipped:
            note = ("\nNot committed (add them to .gitignore, or rename or shrink them): "
                    + "; ".join(skipped))
        if not changes:
            return Result(ok=True, text="unchanged: no outside changes to commit." + note,
                          tool="snapshot")
        commit, _, op_id = commit_external(
            ws, tip, tree, {rel: e for rel, (e, _) in changes.items()}, "Recorded by snapshot.",
            session=ws.session, subject=message)
        known = {rel: st for rel, (_, st) in changes.items() if st is not None}
        _publish(ws, branch, tip, commit, list(changes), known)
    return Result(ok=True, text=f"Committed outside changes to {len(changes)} file(s)." + note,
                  tool="snapshot", op=op_id, commit=commit, changed=sorted(changes),
                  notes=ws.writer.take_notes())


def record_paths(ws: Host, rels: list[str], note: str) -> str | None:
    """Commit the outside changes of just ``rels`` as one external op; its id (None: unchanged)."""
    from .transaction import commit_external, entry_of

    with ws.writer.locked():
        branch, tip, tree = ws.branch(), ws.tip(), ws.tree()
        changes: dict[str, Entry | None] = {}
        known: dict[str, os.stat_result] = {}
        for rel in rels:
            stats: dict[str, os.stat_result] = {}
            entry = entry_of(ws.repo, ws.files.read(rel, limit=ws.max_file_bytes, stats=stats),
                             write=True)
            if entry != ws.repo.entry_at(tree, rel):
                changes[rel] = entry
                known.update(stats)
        if not changes:
            return None
        commit, _, op_id = commit_external(ws, tip, tree, changes, note, session=ws.session)
        _publish(ws, branch, tip, commit, list(changes), known)
    return op_id


def _publish(ws: Host, branch: str, tip: str, commit: str, paths: list[str],
             known: dict[str, os.stat_result]) -> None:
    """Move ``branch`` to the external op and its index entries with it: nothing is written to
    the work tree, so nothing there is rolled back."""
    from .writer import Change, RefMove

    ws.writer.apply(Change("gitspace: snapshot", ws.external_identity,
                           [RefMove(f"refs/heads/{branch}", tip, commit)], at=commit,
                           before=dict.fromkeys(paths), known=known))
