"""Commands on the op history: verify, checkpoints and branches (listing, creating, restoring,
switching), undo and redo. (log, show and diff are reads: ``reads.py``.)"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from ..errors import BadArguments, NotAWorkspace
from ..storage import ids
from .common import (
    JsonOpt,
    echo,
    emit_json,
    find_entry,
    in_place,
    open_workspace,
    progress_shown,
    render,
    show_result,
    usage,
)


def checkpoints(as_json: JsonOpt = False) -> None:
    """List checkpoints."""
    from ..core import checkpoints as cps

    with open_workspace() as ws:
        rows = cps.listing(ws)
        emit_json([vars(c) for c in rows], "checkpoints") if as_json else render().checkpoints(rows)


def branches(as_json: JsonOpt = False) -> None:
    """List branches."""
    from ..core import branches as brs

    with open_workspace() as ws:
        rows = brs.listing(ws)
        emit_json([vars(b) for b in rows], "branches") if as_json else render().branches(rows)


def checkpoint(name: str, message: Annotated[str, typer.Option("-m")] = "") -> None:
    """Save the current state as checkpoint NAME."""
    with open_workspace() as ws:
        _not_in_place(ws, "make a checkpoint", "Each of the agent's turns is marked already "
                      "('gitspace rewind' lists them, 'gitspace rewind N' goes back to one), "
                      "and so is every op ('gitspace rewind OP'). To keep this state yourself, "
                      "commit it, or 'git stash' it.")
        show_result(ws.call("checkpoint", {"name": name, **({"message": message}
                                                            if message else {})}))


def _not_in_place(ws: Any, action: str, instead: str) -> None:
    """Refuse ``action`` in a checkout of the person's own recorded in place, saying why and
    what to do there instead (the commands that change a workspace's refs or index make no
    sense where nothing of the person's may move)."""
    if in_place(ws) is not None:
        raise NotAWorkspace(
            f"gitspace does not {action} in {ws.root}: it is your own checkout, recorded in "
            "place, where gitspace writes no tag, branch or index of yours (only its own line "
            "of ops, and your work-tree files when you undo, redo or rewind). Nothing was "
            "changed.", hint=instead)


def restore(name: str) -> None:
    """Make the files equal checkpoint NAME again, or what they were right after an op (its id,
    or the part of it log shows): a new op; nothing is lost."""
    from ..core import lookup

    with open_workspace() as ws:
        _not_in_place(ws, "restore", f"'gitspace rewind {name} --all' makes every file as that "
                      "turn or op left it (your changes since are recorded first).")
        found = lookup.resolve(ws.repo, name)
        if found.where == "checkpoint" and found.name is not None and found.op_id is None:
            args = {"name": found.name}  # (NAME, or gitspace/NAME where NAME is ambiguous)
        elif found.op_id is not None:
            args = {"op": found.op_id}
        else:
            raise BadArguments(f"{name!r} names {found.describe()}: restore takes a checkpoint or "
                               "an op.", hint="'gitspace checkpoints' lists checkpoints, "
                               "'gitspace log' ops; 'gitspace switch' moves to a branch.")
        show_result(ws.call("restore", args))


def undo(
    count: Annotated[Optional[int], typer.Option(min=1, max=100, help="Undo this many ops.")] = None,  # noqa: UP045,E501
    op: Annotated[Optional[str], typer.Option(help=(  # noqa: UP045
        "Undo this one op: its id, or the part of it log shows."))] = None,
) -> None:
    """Revert the latest op (or several, or one by id) as a new op."""
    if count is not None and op is not None:
        usage("Give --count or --op, not both.")
    with open_workspace() as ws:
        if in_place(ws) is not None:
            _undo_in_place(ws, op, count)
            return
        args: dict[str, Any] = {}
        if count is not None:
            args["count"] = count
        if op is not None:
            found = find_entry(ws, op)
            if found.op is None:
                usage(f"{op} is a commit, not an op: only ops can be undone by id.")
            args["op"] = found.op.op_id
        show_result(ws.call("undo", args))


def _undo_in_place(ws: Any, op: str | None, count: int | None) -> None:
    """In a checkout of your own: take back one op in the work tree only (the agent's latest
    when no --op is given)."""
    from ..core import lookup
    from ..harness.events import Options
    from ..harness.inplace import commands, takeback

    if count is not None:
        usage("In a checkout of your own, undo takes back one op at a time (--op ID), or the "
              "agent's turns with 'gitspace rewind TURN'.")
    op_id = lookup.op_id(ws.repo, op) if op else takeback.latest_agent_op(ws.repo)
    taken = commands.undo_op(ws.repo, op_id, Options(max_file_bytes=ws.max_file_bytes))
    _said_taken(taken, f"op {ids.op(op_id)}")


def _said_taken(taken: Any, what: str, verb: str = "Took back") -> None:
    for note in taken.notes:
        echo(note)
    if taken.op is None:
        echo(f"unchanged: your files already are as {what} leaves them.")
        return
    echo(f"{verb} {what} in your files ({', '.join(taken.files[:10])}"
         + (f" and {len(taken.files) - 10} more" if len(taken.files) > 10 else "")
         + f") as op {ids.op(taken.op)}; your index and HEAD are as they were.")


def redo() -> None:
    """Re-apply what the last undo reverted (in a checkout of your own: what the last undo or
    rewind took back, in your files only)."""
    with open_workspace() as ws:
        if in_place(ws) is None:
            show_result(ws.call("redo", {}))
            return
        from ..harness.events import Options
        from ..harness.inplace import redo as redoing

        taken, undo_id = redoing.redo(ws.repo, Options(max_file_bytes=ws.max_file_bytes))
        _said_taken(taken, f"what op {ids.op(undo_id)} took back", verb="Re-applied")


def branch(
    name: str,
    start: Annotated[Optional[str], typer.Option("--from", help="Checkpoint to fork at.")] = None,  # noqa: UP045
    switch: Annotated[bool, typer.Option("--switch", help="Also switch to it.")] = False,
) -> None:
    """Create branch NAME here (at a checkpoint with --from), staying on this branch as
    'git branch' does; --switch also switches to it ('gitspace switch NAME' later)."""
    args: dict[str, Any] = {"name": name, "switch": switch}
    if start:
        args["from"] = start
    with open_workspace() as ws:
        _not_in_place(ws, "make branches", f"'git branch {name}' (or 'git switch -c') is how "
                      "you make one here; the line follows you to it.")
        show_result(ws.call("branch", args))


def switch(name: str) -> None:
    """Switch to branch NAME (refused if it would overwrite unrecorded changes)."""
    with open_workspace() as ws:
        _not_in_place(ws, "switch branches", f"'git switch {name}' is how you switch here; "
                      "the line follows you.")
        show_result(ws.call("switch", {"name": name}))


def verify(
    rev: Annotated[Optional[str], typer.Argument()] = None,  # noqa: UP045
    start: Annotated[Optional[str], typer.Option("--from", help="Only the commits this revision does not contain (those after it, when it is on the branch).")] = None,  # noqa: UP045,E501
    as_json: JsonOpt = False,
) -> None:
    """Re-parse every op of a branch; exit 1 if any is malformed."""
    from ..core import lookup, timeline
    from ..errors import GitspaceError

    with open_workspace() as ws:
        try:
            base = lookup.resolve(ws.repo, start).commit if start else None
        except GitspaceError as e:
            raise typer.BadParameter(e.message, param_hint="--from") from None
        with progress_shown():
            report = timeline.verify(ws, rev, base)
        if as_json:
            emit_json({"ok": report.ok, "commits": report.commits, "ops": report.ops,
                       "foreign": report.foreign,
                       "problems": [{"commit": c, "problem": p} for c, p in report.problems]},
                      "verify")
        else:
            render().verify(report)
        if not report.ok:
            raise typer.Exit(1)
