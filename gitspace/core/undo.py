"""Undo and redo as ``git revert`` of op commits, each recorded as an op.

Invariants (the walk is over the ledger, so it works across restarts and clones):
- undo and redo read the branch newest first, a page at a time (``GitRepo.walk``), and stop at
  what they need: their cost is the distance back to their target, not the history's length.
  ``undo --op`` finds its op through ``lookup.on_branch`` (the op index, derived from the ledger).
- ``undo`` reverts the newest ops not yet reverted, skipping undo commits: repeated undo walks
  further back and never undoes the previous undo. An op re-applied by a redo is represented by the
  redo from then on, so the next undo reverts the redo.
- ``redo`` reverts the newest undo that no later redo cancelled, as long as the same agent made no
  new op after it.
- With an agent set, only that agent's ops are candidates: on a shared branch an agent undoes its
  own work, never someone else's. Outside edits are undone only by a human (no agent set).
- A revert is a three-way merge per file (what ``git revert`` does): a conflict refuses the whole
  undo and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Conflict, LedgerError, NotFound, ToolFailed
from ..storage import ledger
from ..storage.objects import Commit, Entry
from . import lookup, userfiles
from .transaction import Outcome, Stage, Txn
from .workspace import Workspace


def ops_newest_first(ws: Workspace) -> Iterator[tuple[ledger.Op, Commit]]:
    for commit in ws.repo.walk(f"refs/heads/{ws.branch()}"):
        try:
            op = ledger.parse_message(commit.message)
        except LedgerError:
            continue
        if op is None or op.source == "init":
            return
        yield op, commit


def _mine(agent: str | None, op: ledger.Op) -> bool:
    if agent is None:
        return True
    return op.source == "tool" and op.agent == agent


def undo_targets(ws: Workspace, agent: str | None, count: int) -> list[tuple[ledger.Op, Commit]]:
    """The ``count`` newest ops not undone yet: ``agent``'s (any op's, for no agent)."""
    reverted: set[str] = set()
    targets = []
    for op, commit in ops_newest_first(ws):
        if op.undo_of:
            reverted.update(op.undo_of)
            continue
        if op.op_id in reverted or not _mine(agent, op):
            continue
        targets.append((op, commit))
        if len(targets) == count:
            break
    if not targets:
        raise ToolFailed(
            "Nothing to undo: there is no earlier op" + (f" by {agent}" if agent else "")
            + " that is not already undone.",
        )
    return targets


def op_target(ws: Workspace, text: str) -> tuple[ledger.Op, Commit]:
    """The op ``text`` names (its id, or a unique start or end of it), to undo on this branch."""
    op_id = lookup.op_id(ws.repo, text)
    here = lookup.on_branch(ws.repo, op_id, ws.branch())
    if here is not None:
        if here.op.source == "init":
            raise ToolFailed(f"Op {op_id} created the workspace; there is nothing before it to "
                             "undo to.")
        if here.undone_by:
            raise ToolFailed(f"Op {op_id} is already undone.")
        return here.op, here.commit
    found = lookup.find_op(ws.repo, op_id)
    if found is not None and found.where in ("checkpoint", "branch"):
        raise ToolFailed(f"Op {op_id} created {found.where} {found.name}; it changed no files, so "
                         "there is nothing to undo.")
    # lookup.op_id found the op recorded somewhere, and it is not on this branch.
    raise NotFound(f"There is no op {op_id} on branch {ws.branch()}: it was recorded on another "
                   "branch.",
                   hint="'gitspace log' lists the ops of this branch; undo an op on its own "
                   "branch ('gitspace switch BRANCH').")


def op_commit(ws: Workspace, text: str) -> str:
    """The commit that recorded the op ``text`` names (as for ``op_target``) on this branch
    (undone or not)."""
    op_id = lookup.op_id(ws.repo, text)
    found = lookup.on_branch(ws.repo, op_id, ws.branch())
    if found is None:
        raise NotFound(f"There is no op {op_id} on branch {ws.branch()}.",
                       hint="'gitspace log' lists op ids.")
    return found.commit.sha


def redo_target(ws: Workspace, agent: str | None) -> tuple[ledger.Op, Commit]:
    """The newest undo by ``agent`` (anyone's, for no agent) that no op came after."""
    cancelled: set[str] = set()
    for op, commit in ops_newest_first(ws):
        if op.redo_of:
            cancelled.add(op.redo_of)
            continue
        if op.undo_of:
            if op.op_id in cancelled or not _mine(agent, op):
                continue
            return op, commit
        if _mine(agent, op) and op.source == "tool":
            raise ToolFailed(
                f"Nothing to redo: a new op ({op.tool} {op.op_id}) came after the last undo.",
            )
    raise ToolFailed("Nothing to redo: there is no undo to re-apply.")


def revert_into(ws: Workspace, txn: Txn, commit: Commit, label: str) -> None:
    """Stage the reverse of ``commit`` on top of the txn's current state."""
    parent_tree = ws.repo.parent_tree(commit)
    txn.moves = True  # (an untracked file in the way is refused: core/userfiles.py)
    for change in ws.repo.diff_trees(commit.tree, parent_tree):
        base, theirs = change.old, change.new  # base: what the op wrote; theirs: before the op
        current = txn.read(change.path)
        if current is not None and change.path not in txn.writes and txn.entry(change.path) is None:
            # A file of the user's where the op's change would go: refused before any merge.
            userfiles.refuse_over(ws.repo, {change.path: (current, txn.mode(change.path))}, {},
                                  {}, moves=True, doing=f"Undoing {label}")
        ours = None if current is None else Entry(txn.mode(change.path),
                                                  ws.repo.hash_object("blob", current))
        if ours == theirs:
            continue
        if ours == base:
            result = theirs
        else:
            result = ws.repo.merge_entry(ours, base, theirs)
            if result is None:
                raise _conflict(change.path, label)
        if result is None:
            txn.delete(change.path)
        else:
            txn.write(change.path, ws.repo.read_blob(result.sha), result.mode)


def _conflict(path: str, label: str) -> Conflict:
    return Conflict(
        f"Cannot undo {label}: {path} was changed again since, and the changes overlap.",
        hint="Undo the later ops first, or restore a checkpoint. Nothing was changed.",
    )


def stage_undo(ws: Workspace, targets: list[tuple[ledger.Op, Commit]]) -> Stage:
    def stage(txn: Txn) -> Outcome:
        for op, commit in targets:
            revert_into(ws, txn, commit, f"{op.tool} ({op.op_id})")
        names = ", ".join(f"{op.tool} {op.op_id}" for op, _ in targets)
        more = f" (+{len(targets) - 1})" if len(targets) > 1 else ""
        return Outcome(f"Undid {len(targets)} op(s): {names}.", f"undo {targets[0][0].tool}{more}")

    return stage


def stage_redo(ws: Workspace, undo_op: ledger.Op, undo_commit: Commit) -> Stage:
    def stage(txn: Txn) -> Outcome:
        revert_into(ws, txn, undo_commit, f"undo {undo_op.op_id}")
        return Outcome(f"Redid what undo {undo_op.op_id} reverted ({', '.join(undo_op.undo_of)}).",
                       "redo")

    return stage
