"""Commands on the op history: log, show, diff, verify, checkpoints and branches (listing,
creating, restoring, switching), undo and redo."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..errors import BadArguments, NotAWorkspace
from ..storage import ids
from . import lines
from .common import (
    JsonOpt,
    colour_on,
    echo,
    emit_json,
    find_entry,
    in_place,
    open_workspace,
    progress_shown,
    render,
    show_result,
    state,
    take_paths,
    usage,
    write_raw,
)
from .pager import paged


class Source(StrEnum):
    tool = "tool"
    script = "script"
    harness = "harness"
    external = "external"
    init = "init"
    transcript = "transcript"
    commit = "commit"


def log(
    rev: Annotated[Optional[str], typer.Argument(metavar="REV", help=(  # noqa: UP045
        "Where to start: a branch, a checkpoint, an op id (or the part of one log shows) or "
        "any git revision. Default: HEAD."))] = None,
    n: Annotated[int, typer.Option("-n", "--max-count", min=1, help="How many entries.")] = 20,
    skip: Annotated[int, typer.Option(min=0, help="Skip this many entries first.")] = 0,
    agent: Annotated[Optional[str], typer.Option(help="Only ops by this agent.")] = None,  # noqa: UP045
    session: Annotated[Optional[str], typer.Option(help=(  # noqa: UP045
        "Only ops of this session: its id, or a unique start or end of it (the 8 characters "
        "a turn's checkpoint name shows)."))] = None,
    tool: Annotated[Optional[str], typer.Option(help="Only ops of this tool.")] = None,  # noqa: UP045
    source: Annotated[Optional[Source], typer.Option(help=(  # noqa: UP045
        "Only entries from this source: a tool call, a constraint script, another harness's "
        "tool (Claude Code...), an outside edit, the first commit, a committed transcript, or "
        "a commit that is no op."))] = None,
    since: Annotated[Optional[str], typer.Option(help="Only entries after this date ('2 days ago', 2025-01-31).")] = None,  # noqa: UP045,E501
    until: Annotated[Optional[str], typer.Option(help="Only entries before this date.")] = None,  # noqa: UP045
    fmt: Annotated[Optional[str], typer.Option("--format", help=(  # noqa: UP045
        "table (the default on a terminal), line (one line per entry: the default into a pipe) "
        "or a template such as '{op_short} {tool} {files}' (fields: gitspace log --format help)."
    ))] = None,
    every: Annotated[bool, typer.Option("--all", help=(
        "Every branch (and every line recorded in place), not only the current one."))] = False,
    as_json: JsonOpt = False,
) -> None:
    """The op timeline, newest first: time, op, agent, tool, args, files, checkpoints.

    'gitspace log -- PATH...' keeps the entries that changed those paths (a file, or anything
    under a folder).
    """
    from ..core import timeline

    fmt = _log_format(fmt)
    if every and rev:
        usage("Give a REV or --all, not both.")
    filters = timeline.Filters(agent=agent, session=session, tool=tool,
                               source=source.value if source else None, since=since, until=until,
                               paths=tuple(take_paths()))
    with open_workspace() as ws:
        start: str | None = find_entry(ws, rev).commit if rev else "HEAD"  # HEAD: or detached in CI
        also: tuple[str, ...] = ()
        here = in_place(ws) if rev is None and not every else None
        if here is not None and here.tip is not None:  # the line's ops and your commits
            start, also = here.ref, ("HEAD",)
        if every:
            start = None  # every branch and line, each child before its parents
        entries = timeline.query(ws.repo, start, filters, offset=skip, limit=n, count=False,
                                 also=also, first_parent=not also and not every).entries
        if as_json:
            emit_json([e.as_json() for e in entries], "log")
            return
        depths = _call_depths(ws.root, entries)
        if fmt == "table":
            with render().paged():
                render().timeline(entries, depths)
        else:
            with paged(state.pager) as stream:
                for e in entries:
                    depth = depths.get(e.op.op_id, 0) if e.op else 0
                    stream.write((lines.compact(e, depth) if fmt == "line" else
                                  lines.render_template(fmt, e, depth)) + "\n")
            if not entries:  # said beside the output, so a pipe still reads nothing
                echo("No entries match.", err=True)


def _call_depths(root: Path, entries: list[Any]) -> dict[str, int]:
    """How deep in delegated calls each op was made (only looked into when one was)."""
    if not any(e.op is not None and e.op.parent_session for e in entries):
        return {}
    from ..agent import calls

    return calls.depths([e.op for e in entries], calls.saved_parent(root))


def _log_format(fmt: str | None) -> str:
    if fmt is None:
        return "table" if sys.stdout.isatty() else "line"
    if fmt == "help":
        echo("--format takes table, line, or a template of these fields:\n" + "\n".join(
            f"  {{{name}}}  {what}" for name, what in lines.TEMPLATE_FIELDS.items()))
        raise typer.Exit()
    if fmt in ("table", "line"):
        return fmt
    try:
        lines.check_template(fmt)
    except lines.BadTemplate as e:
        usage(str(e))
    return fmt


def show(
    ref: Annotated[str, typer.Argument(metavar="OP", help=(
        "An op id (or the part of one log shows), a checkpoint, a branch or any commit."))],
    stat: Annotated[bool, typer.Option("--stat", help="Only the files changed, with counts.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """One op or commit: its record and its diff."""
    from ..storage.objects import EMPTY_TREE

    with open_workspace() as ws:
        entry = find_entry(ws, ref)
        if as_json:
            emit_json(entry.as_json(), "show")
            return
        parent = entry.parents[0] if entry.parents else EMPTY_TREE
        diff = ["--stat"] if stat else ["--stat", "-p"]
        with render().paged():
            render().op_detail(entry)
            write_raw(ws.repo.git("diff", *_color(), *diff, parent, entry.commit), render().out.file)


def diff(
    a: Annotated[Optional[str], typer.Argument(metavar="A", help=(  # noqa: UP045
        "An op, checkpoint, branch or revision (none: the changes not recorded yet)."))] = None,
    b: Annotated[Optional[str], typer.Argument(metavar="B", help="The other side (default: HEAD).")] = None,  # noqa: UP045,E501
    stat: Annotated[bool, typer.Option("--stat", help="Only the files changed, with counts.")] = False,
) -> None:
    """The diff from A to B (ops, checkpoints, branches or revisions); with no A, the changes
    made outside gitspace that are not recorded yet, as 'gitspace snapshot' would record them."""
    with open_workspace() as ws:
        if a is None:
            _unrecorded(ws, stat)
            return
        left = find_entry(ws, a).commit
        here = in_place(ws) if not b else None
        right = find_entry(ws, b).commit if b else (
            here.tip if here is not None and here.tip else ws.repo.read_ref("HEAD") or left)
        patch = ws.repo.git("diff", *_color(), *(["--stat"] if stat else []), left, right)
        if not patch:
            what = f"{a} and {b}" if b else f"{a} and {'the line' if here else 'HEAD'}"
            echo(f"No differences: {what} have the same files.")
            return
        with render().paged():
            write_raw(patch, render().out.file)


def _unrecorded(ws: Any, stat: bool) -> None:
    """``gitspace diff`` alone: what is on disk and not recorded yet, against the tip."""
    from ..core import unrecorded

    here = in_place(ws)
    if here is not None:
        from ..harness import inplace_record
        from ..harness.events import Options

        found = inplace_record.pending(ws.repo, Options(max_file_bytes=ws.max_file_bytes))
        base, (paths, skipped) = here.tip or here.head, found or ([], [])
    else:
        from ..core.snapshot import pending_changes

        base = ws.repo.read_ref("HEAD")
        changes, skipped = pending_changes(ws) if base else ({}, [])
        paths = sorted(changes)
    patch = unrecorded.patch(ws.repo, base, paths, stat_only=stat,
                             color=colour_on()) if paths else b""
    if not patch:
        echo("No changes to record: the files are as the last op left them."
             if here is None else "No changes to record: the files are as the line has them.")
    else:
        with render().paged():
            write_raw(patch, render().out.file)
    for note in skipped:
        echo(f"not recorded: {note}", err=True)


def _color() -> list[str]:
    return ["--color=always" if colour_on() else "--color=never"]


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
        if found.where == "checkpoint" and found.name == name and found.op_id is None:
            args = {"name": name}
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
    from ..harness import inplace, inplace_redo
    from ..harness.events import Options

    if count is not None:
        usage("In a checkout of your own, undo takes back one op at a time (--op ID), or the "
              "agent's turns with 'gitspace rewind TURN'.")
    op_id = lookup.op_id(ws.repo, op) if op else inplace_redo.latest_undoable(ws.repo)
    taken = inplace.undo_op(ws.repo, op_id, Options(max_file_bytes=ws.max_file_bytes))
    _said_taken(taken, f"op {ids.op(op_id)}")


def _said_taken(taken: Any, what: str, verb: str = "Took back") -> None:
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
        from ..harness import inplace_redo
        from ..harness.events import Options

        taken, undo_id = inplace_redo.redo(ws.repo, Options(max_file_bytes=ws.max_file_bytes))
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
