"""Finding a tool call's effect in the ledger after a restart, so it is never applied twice.

Invariant: a call whose op id was recorded before it ran is looked up, not re-run: wherever the
ledger records that op (its commit, the checkpoint tag or the created branch's reflog, found by
``core.lookup``) is the proof it happened, and its result is rebuilt from what the ledger says. A
call the ledger does not know never took effect (ops are atomic), so running it again is safe.
"""

from __future__ import annotations

from typing import Any

from ..core import branches, lookup
from ..core.workspace import Workspace
from ..storage import ledger


def recorded(ws: Workspace, tool: str, args: dict[str, Any], op_id: str) -> str | None:
    """The result text of op ``op_id`` if the ledger holds it, else None."""
    found = lookup.find_op(ws.repo, op_id)
    if found is None:
        return None
    if found.where == "checkpoint":
        return (f"Checkpoint {found.name} saved (recovered after a restart: the checkpoint "
                f"records op {op_id}, so it was not created twice).")
    if found.where == "branch" and found.name is not None:
        return _branch(ws, found.name, args, op_id)
    message = ws.repo.commit(found.commit).message
    answer = ledger.result_of(message) or message.split("\n", 1)[0]
    return (f"{answer}\n(Recovered after a restart: this call had already run as op "
            f"{op_id}, commit {found.commit[:12]}, so it was not run again.)")


def _branch(ws: Workspace, name: str, args: dict[str, Any], op_id: str) -> str:
    """The branch this op created; finish the switch the crash may have cut."""
    if args.get("switch", True) and ws.repo.head_branch() != name:
        branches.switch(ws, name)
    where = "and checked out " if args.get("switch", True) else ""
    return (f"Branch {name} created {where}(recovered after a restart: the branch records op "
            f"{op_id}, so it was not created twice).")
