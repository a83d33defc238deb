"""Finding a tool call's effect in the ledger after a restart, so it is never applied twice.

Invariant: a call whose op id was recorded before it ran is looked up, not re-run: the commit
carrying that ``Gitspace-Op`` (or, for a checkpoint, the tag carrying it) is the proof it
happened, and its result is rebuilt from what the ledger says. A call the ledger does not know
never took effect (ops are atomic), so running it again is safe.
"""

from __future__ import annotations

from typing import Any

from ..core import branches, checkpoints
from ..core.workspace import Workspace
from ..storage import ledger

SEARCH_DEPTH = 1000  # a resumed op is among the newest commits of its branch


def recorded(ws: Workspace, tool: str, args: dict[str, Any], op_id: str) -> str | None:
    """The result text of op ``op_id`` if the ledger holds it, else None."""
    if tool == "branch":
        return _branch(ws, args, op_id)
    if tool == "checkpoint":
        name = args.get("name")
        if isinstance(name, str) and checkpoints.op_of(ws, name) == op_id:
            return (f"Checkpoint {name} saved (recovered after a restart: the checkpoint "
                    f"records op {op_id}, so it was not created twice).")
        return None
    marker = f"Gitspace-Op: {op_id}\n"
    for commit in ws.repo.log(f"refs/heads/{ws.branch()}", SEARCH_DEPTH):
        if marker in commit.message + "\n":
            answer = ledger.result_of(commit.message) or commit.message.split("\n", 1)[0]
            return (f"{answer}\n(Recovered after a restart: this call had already run as op "
                    f"{op_id}, commit {commit.sha[:12]}, so it was not run again.)")
    return None


def _branch(ws: Workspace, args: dict[str, Any], op_id: str) -> str | None:
    """A branch whose reflog says this op created it; finish the switch the crash may have cut."""
    name = args.get("name")
    if not isinstance(name, str) or branches.op_of(ws, name) != op_id:
        return None
    if args.get("switch", True) and ws.repo.head_branch() != name:
        branches.switch(ws, name)
    where = "and checked out " if args.get("switch", True) else ""
    return (f"Branch {name} created {where}(recovered after a restart: the branch records op "
            f"{op_id}, so it was not created twice).")
