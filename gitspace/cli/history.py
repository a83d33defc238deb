"""Commands on the op history: log, show, diff, verify, checkpoints and branches (listing,
creating, restoring, switching), undo and redo."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from .common import JsonOpt, call_tool, emit_json, open_workspace, render, write_raw


def log(
    n: Annotated[int, typer.Option("-n", help="How many ops.")] = 20,
    rev: Annotated[Optional[str], typer.Argument(help="Branch or revision.")] = None,  # noqa: UP045
    as_json: JsonOpt = False,
) -> None:
    """The op timeline: time, agent, tool, args, files touched, checkpoints."""
    from ..core import timeline

    with open_workspace() as ws:
        entries = timeline.timeline(ws, n, rev)
        emit_json([e.as_json() for e in entries]) if as_json else render().timeline(entries)


def show(ref: str, as_json: JsonOpt = False) -> None:
    """One op (by op id) or any commit: its record and its diff."""
    from ..core import timeline

    with open_workspace() as ws:
        entry = timeline.find(ws, ref)
        if as_json:
            emit_json(entry.as_json())
            return
        render().op_detail(entry)
        parent = f"{entry.commit}^" if ws.repo.commit(entry.commit).parents else None
        args = ["diff", "--stat", "-p", parent, entry.commit] if parent else [
            "show", "--format=", entry.commit]
        write_raw(ws.repo.git(*args))


def diff(a: str, b: Annotated[Optional[str], typer.Argument()] = None) -> None:  # noqa: UP045
    """Diff between two ops/revisions/checkpoints (B defaults to the branch tip)."""
    from ..core import timeline

    with open_workspace() as ws:
        left = timeline.find(ws, a).commit
        right = timeline.find(ws, b).commit if b else ws.tip()
        write_raw(ws.repo.git("diff", left, right))


def checkpoints(as_json: JsonOpt = False) -> None:
    """List checkpoints."""
    from ..core import checkpoints as cps

    with open_workspace() as ws:
        rows = cps.listing(ws)
        emit_json([vars(c) for c in rows]) if as_json else render().checkpoints(rows)


def branches(as_json: JsonOpt = False) -> None:
    """List branches."""
    from ..core import branches as brs

    with open_workspace() as ws:
        rows = brs.listing(ws)
        emit_json([vars(b) for b in rows]) if as_json else render().branches(rows)


def checkpoint(name: str, message: Annotated[str, typer.Option("-m")] = "") -> None:
    """Save the current state as checkpoint NAME."""
    call_tool("checkpoint", {"name": name, **({"message": message} if message else {})})


def restore(name: str) -> None:
    """Make the files equal checkpoint NAME again (a new op; nothing is lost)."""
    call_tool("restore", {"name": name})


def undo(
    count: Annotated[Optional[int], typer.Option(help="Undo this many ops.")] = None,  # noqa: UP045
    op: Annotated[Optional[str], typer.Option(help="Undo this one op.")] = None,  # noqa: UP045
) -> None:
    """Revert the latest op (or several, or one by id) as a new op."""
    args: dict[str, Any] = {}
    if count is not None:
        args["count"] = count
    if op is not None:
        args["op"] = op
    call_tool("undo", args)


def redo() -> None:
    """Re-apply what the last undo reverted."""
    call_tool("redo", {})


def branch(
    name: str,
    start: Annotated[Optional[str], typer.Option("--from", help="Checkpoint to fork at.")] = None,  # noqa: UP045
    no_switch: Annotated[bool, typer.Option("--no-switch")] = False,
) -> None:
    """Create branch NAME (at a checkpoint with --from) and switch to it."""
    args: dict[str, Any] = {"name": name, "switch": not no_switch}
    if start:
        args["from"] = start
    call_tool("branch", args)


def switch(name: str) -> None:
    """Switch to branch NAME (refused if it would overwrite unrecorded changes)."""
    call_tool("switch", {"name": name})


def verify(
    rev: Annotated[Optional[str], typer.Argument()] = None,  # noqa: UP045
    as_json: JsonOpt = False,
) -> None:
    """Re-parse every op of a branch; exit 1 if any is malformed."""
    from ..core import timeline

    with open_workspace() as ws:
        report = timeline.verify(ws, rev)
        if as_json:
            emit_json({"ok": report.ok, "commits": report.commits, "ops": report.ops,
                       "foreign": report.foreign,
                       "problems": [{"commit": c, "problem": p} for c, p in report.problems]})
        else:
            render().verify(report)
        if not report.ok:
            raise typer.Exit(1)
