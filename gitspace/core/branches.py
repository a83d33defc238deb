"""Branches: plain git branches; forking at a checkpoint; switching without losing work.

Invariant: ``switch`` changes only files that differ between the two branch tips, and refuses
(changing nothing) when any of those files has an outside change or an untracked file is in the
way, or when another work tree (the user's checkout, another agent's worktree) has that branch
checked out. It is one change of the writer (HEAD, files, index), so a crash mid-switch is
finished on the next open.
"""

from __future__ import annotations

from ..errors import Conflict, GitspaceError, NotFound
from ..storage import ledger
from ..storage.files import State
from ..storage.records import record
from . import refnames
from .identity import Identity
from .transaction import checkout_changes
from .workspace import Workspace
from .writer import Change, RefMove


@record(frozen=True)
class Branch:
    name: str
    tip: str
    current: bool


def check_name(name: str) -> str:
    return refnames.check("branch", name)


def listing(ws: Workspace) -> list[Branch]:
    current = ws.repo.head_branch()
    return [
        Branch(ref[len("refs/heads/"):], obj, ref == f"refs/heads/{current}")
        for ref, obj, _ in ws.repo.refs("refs/heads")
    ]


def create(ws: Workspace, who: Identity, name: str, start: str, *, switch: bool = False) -> int:
    """Make branch ``name`` at ``start``, by ``who`` (its op id, when fixed, in the reflog);
    with ``switch``, check it out in the same change (both or neither). How many files changed
    on disk."""
    refnames.check_new(ws, "branch", name, "refs/heads/")
    ref = f"refs/heads/{name}"
    with ws.writer.locked():
        if ws.repo.read_ref(ref) is not None:
            raise GitspaceError(f"A branch named {name!r} already exists.",
                                hint="Switch to it with the switch tool, or pick another name.",
                                cli_hint=f"Switch to it with 'gitspace switch {name}', or pick "
                                         "another name.")
        made = RefMove(ref, None, start)
        if not switch:
            ws.writer.apply(Change(ledger.branch_note(name, who.op_id), who.author, [made]))
            return 0
        wanted, before = _checkout(ws, start, name)
        ws.writer.apply(Change(ledger.branch_note(name, who.op_id), who.author, [made],
                               head=name, at=start, files=wanted, before=before))
        return len(wanted)


def fork_name(ws: Workspace, op_id: str) -> str:
    """A new branch's name for a fork at op ``op_id`` (``run --fork``, ``gitspace fork``):
    ``fork/<its last 8>``, numbered when taken."""
    base = f"fork/{op_id[-8:].lower()}"
    name, n = base, 1
    while ws.repo.read_ref(f"refs/heads/{name}") is not None:
        n += 1
        name = f"{base}-{n}"
    return name


def switch(ws: Workspace, who: Identity, name: str) -> int:
    """Check out branch ``name``; returns how many files changed on disk."""
    check_name(name)
    with ws.writer.locked():
        current = ws.branch()
        if name == current:
            return 0
        target = ws.repo.read_ref(f"refs/heads/{name}")
        if target is None:
            names = ", ".join(b.name for b in listing(ws))
            raise NotFound(f"There is no branch named {name!r}.", hint=f"Branches: {names}.")
        elsewhere = ws.repo.checked_out_elsewhere(name)
        if elsewhere is not None:
            raise Conflict(
                f"Branch {name} is checked out in {elsewhere}: two work trees on one branch "
                "would overwrite each other's files.",
                hint="Start a branch of your own there instead ('gitspace branch NAME').",
            )
        wanted, before = _checkout(ws, target, name)
        ws.writer.apply(Change(f"checkout: moving to {name}", who.author, head=name, at=target,
                               files=wanted, before=before))
        return len(wanted)


def _checkout(ws: Workspace, target: str, name: str) -> tuple[dict[str, State], dict[str, State]]:
    """The files that change going from the current tip to ``target`` (refused, changing
    nothing, over an outside change or an untracked file in the way)."""
    return checkout_changes(
        ws, ws.repo.commit(ws.tip()).tree, ws.repo.commit(target).tree,
        f"Switching to {name}", "Run 'gitspace snapshot' to record them first, then switch.")
