"""How a resumed agent finds a tool call that already ran, so it is never applied twice.

Invariant: a call whose op id was recorded before it ran is looked up, not re-run: wherever the
ledger records that op (its commit, the checkpoint tag or the created branch's reflog, found by
``core.lookup``) is the proof it happened, and its result is rebuilt from what the ledger says. A
call the ledger does not know never took effect (ops are atomic), so running it again is safe.
``from_ledger`` is every tool's way (``Tool.recover``); a tool whose effect has a second half
that a crash can cut (``branch`` then switching to it) finishes that half in its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import lookup
from ..core.workspace import Workspace
from ..storage import ledger

Recover = Callable[[Workspace, dict[str, Any], str], "str | None"]


def from_ledger(ws: Workspace, args: dict[str, Any], op_id: str) -> str | None:
    """The result text of op ``op_id`` if the ledger holds it, else None."""
    found = lookup.find_op(ws.repo, op_id)
    if found is None:
        return None
    if found.where == "checkpoint":
        return (f"Checkpoint {found.name} saved (recovered after a restart: the checkpoint "
                f"records op {op_id}, so it was not created twice).")
    if found.where == "branch":
        where = "and checked out " if args.get("switch", True) else ""
        return (f"Branch {found.name} created {where}(recovered after a restart: the branch "
                f"records op {op_id}, so it was not created twice).")
    message = ws.repo.commit(found.commit).message
    answer = ledger.result_of(message) or message.split("\n", 1)[0]
    return (f"{answer}\n(Recovered after a restart: this call had already run as op "
            f"{op_id}, commit {found.commit[:12]}, so it was not run again.)")
