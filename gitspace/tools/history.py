"""Built-in history tools: checkpoint, restore, undo, redo, branch, switch, log."""

from __future__ import annotations

import time
from typing import Any

from ..core import branches, checkpoints, lookup, timeline, undo
from ..core.identity import Identity
from ..core.result import Result
from ..core.workspace import Workspace
from ..errors import BadArguments
from .recovery import from_ledger
from .registry import builtin, integer, obj, string

CHECKPOINT_NAME = string("Checkpoint name: letters, digits, '.', '_', '-'.")


@builtin(
    "checkpoint",
    "Save the current state under a name so you can come back to it with restore. Call this "
    "BEFORE trying something that might be a dead end.",
    {"name": "junction-1", "message": "before trying the east corridor"},
    obj(["name"], name=CHECKPOINT_NAME,
        message=string("Why you saved here (one line).", maxLength=checkpoints.MESSAGE_CAP)),
    mutates=True,
    moves_refs=True,
)
def checkpoint(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    cp = checkpoints.create(ws, who, args["name"], args.get("message", ""))
    return Result(ok=True, text=f"Checkpoint {cp.name} saved at {cp.commit[:12]} on {cp.branch}.",
                  tool=who.tool, commit=cp.commit)


@builtin(
    "restore",
    "Return the files to a checkpoint's state (or to their state right after an earlier op). "
    "This is a new op: nothing is lost, and the path you abandon stays in the log (undo brings "
    "it back).",
    {"name": "junction-1"},
    obj(name=CHECKPOINT_NAME, op=string("Instead of a checkpoint: an op id on this branch.")),
    mutates=True,
    idempotent=True,
    restores_checkpoint="name",
)
def restore(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    if ("name" in args) == ("op" in args):
        raise BadArguments("Pass a checkpoint name or an op id (op), one of the two.",
                           hint="'gitspace checkpoints' lists checkpoints; 'gitspace log' op ids.")
    if "op" in args:
        target, label = undo.op_commit(ws, args["op"]), f"op {args['op']}"
    else:
        target, label = checkpoints.resolve(ws, args["name"]), args["name"]
    return ws.transact(who.op(dict(args)), checkpoints.stage_restore(ws, label, target),
                       who.author)


@builtin(
    "undo",
    "Revert your most recent op (or the last `count` ops, or one earlier op by id). Repeated "
    "undo walks further back; it never undoes the previous undo — use redo for that.",
    {"count": 1},
    obj(count=integer("How many ops to undo (default 1).", minimum=1, maximum=100),
        op=string("Undo just this earlier op, by its op id.")),
    mutates=True,
)
def undo_tool(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    if "op" in args and "count" in args:
        raise BadArguments("Pass either count or op, not both.")
    targets = ([undo.op_target(ws, args["op"])] if "op" in args
               else undo.undo_targets(ws, who.agent, args.get("count", 1)))
    op = who.op(args, undo_of=tuple(o.op_id for o, _ in targets))
    return ws.transact(op, undo.stage_undo(ws, targets), who.author)


@builtin(
    "redo",
    "Re-apply what the last undo reverted.",
    {},
    obj(),
    mutates=True,
)
def redo_tool(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    undo_op, commit = undo.redo_target(ws, who.agent)
    op = who.op(args, redo_of=undo_op.op_id)
    return ws.transact(op, undo.stage_redo(ws, undo_op, commit), who.author)


def _recover_branch(ws: Workspace, args: dict[str, Any], op_id: str) -> str | None:
    """A branch this op created, switched to if the crash cut the switch that was asked for."""
    found = lookup.find_op(ws.repo, op_id)
    if found is not None and found.where == "branch" and found.name is not None:
        if args.get("switch", True) and ws.repo.head_branch() != found.name:
            branches.switch(ws, ws.identity("branch", op_id=op_id), found.name)
    return from_ledger(ws, args, op_id)


@builtin(
    "branch",
    "Start a new branch at the current state (or at checkpoint `from`) and switch to it, to try "
    "another strategy without losing this one. Pass switch=false to only create it.",
    {"name": "try-east", "from": "junction-1"},
    obj(["name"], name=string("Branch name, like 'try-east'."),
        **{"from": string("Checkpoint to start from (default: the current state)."),
           "switch": {"type": "boolean", "description": "Switch to it (default true).",
                      "default": True}}),
    mutates=True,
    moves_refs=True,
    recover=_recover_branch,
)
def branch_tool(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    start = checkpoints.resolve(ws, args["from"]) if "from" in args else ws.tip()
    switch = args.get("switch", True)
    changed = branches.create(ws, who, args["name"], start, switch=switch)  # the call is whole
    text = f"Branch {args['name']} created at {start[:12]}."
    if switch:
        text = f"{text[:-1]} and checked out ({changed} file(s) changed)."
    return Result(ok=True, text=text, tool=who.tool, commit=start)


@builtin(
    "switch",
    "Switch to another branch. Refused if it would overwrite changes not recorded yet.",
    {"name": "main"},
    obj(["name"], name=string("Branch name.")),
    mutates=True,
    idempotent=True,
    moves_refs=True,
)
def switch_tool(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    changed = branches.switch(ws, who, args["name"])
    return Result(ok=True, text=f"On branch {args['name']} ({changed} file(s) changed).",
                  tool=who.tool, commit=ws.tip())


@builtin(
    "log",
    "List the most recent ops on this branch: time, agent, tool, what changed, checkpoints.",
    {"limit": 10},
    obj(limit=integer("How many ops (default 10, at most 100).", minimum=1, maximum=100)),
    mutates=False,
)
def log_tool(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    rows = []
    for e in timeline.timeline(ws, args.get("limit", 10)):
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time))
        marks = f" [checkpoint {', '.join(e.checkpoints)}]" if e.checkpoints else ""
        op = f"{e.op.op_id} " if e.op else ""
        rows.append(f"{when} {op}{e.author}: {e.subject}{marks}")
    return Result(ok=True, text="\n".join(rows) or "No ops yet.", tool=who.tool)
