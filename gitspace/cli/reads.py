"""The commands that read: status, log, show, diff. They answer about as fast as Python starts.

Invariant: a read imports only what it uses. This module and what it imports at its top import
neither typer nor rich: each command declares its parameters with ``params`` (typer reads the
same declarations for help, completion and every command line ``params.parse`` leaves to it),
draws plain lines (``lines``; rich only for the table ``log`` draws on a terminal), and opens
the workspace without its tools (``shared.open_to_read``). ``tests/test_cli_reads.py`` pins the
modules each of them imports.

A read command is a function here, declared with ``params.declare``, and one line in ``READS``
(``blame`` goes beside ``diff``: ``"blame": blame``, from a module of its own if it is large).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path

from ..errors import GitspaceError
from . import jsonout, lines
from .options import colour_on, state
from .pager import paged
from .params import Argument, Command, Option, declare
from .shared import (
    echo,
    emit_json,
    find_entry,
    in_place,
    open_to_read,
    relative,
    render,
    take_paths,
    usage,
    write_raw,
)

TYPE_CHECKING = False  # typing is not imported at run time: a read starts without it
if TYPE_CHECKING:
    from typing import Any

JSON = Option("--json", help="Print JSON (docs/json.md); --json=a,b keeps only those fields.")
STAT = Option("--stat", help="Only the files changed, with counts.")


@declare(as_json=JSON)
def status(as_json: bool = False) -> None:
    """Branch, tip op, and outside changes not yet snapshotted."""
    from ..core.snapshot import pending_changes

    with open_to_read() as ws:
        branch, tip = ws.repo.head_branch(), ws.repo.read_ref("HEAD")
        here = in_place(ws)
        if here is not None:
            data = _status_in_place(ws, here)
            emit_json(data, "status") if as_json else echo("\n".join(lines.status(data)))
            return
        changes, skipped = pending_changes(ws) if tip else ({}, [])
        data = {"root": str(ws.root), "branch": branch, "detached": branch is None, "tip": tip,
                "pending": sorted(changes), "too_large": skipped, "last_op": _last_op(ws, tip)}
        if tip is not None and _not_owned(ws):
            data["own"] = True  # a checkout of the person's own, where nothing is recorded
        if as_json:
            emit_json(data, "status")
        else:
            echo("\n".join(lines.status(data)))


def _not_owned(ws: Any) -> bool:
    """Is this plainly a checkout of the person's own? (False when that cannot be told: a
    shallow clone's history ends before the root a workspace starts from.)"""
    try:
        return not ws.owned
    except GitspaceError:
        return False


def _status_in_place(ws: Any, here: Any) -> dict[str, Any]:
    from ..harness.events import Options
    from ..harness.inplace.place import pending
    from ..harness.route import recording

    found = pending(ws.repo, Options(max_file_bytes=ws.max_file_bytes))
    last = _last_op(ws, here.tip)
    if last is not None and last["op"]["tool"] == "follow":  # where the line starts, or caught up
        parent = last["parents"][0] if last["parents"] else None
        last["line_start"] = parent == last["op"]["args"].get("commit")
    return {"root": str(ws.root), "branch": here.branch, "detached": here.branch is None,
            "tip": here.head, "in_place": True, "line": here.ref, "line_tip": here.tip,
            "recording": recording(ws.repo.gitdir),
            "pending": found[0] if found else [], "too_large": found[1] if found else [],
            "last_op": last}


def _last_op(ws: Any, tip: str | None) -> dict[str, Any] | None:
    """The log entry of the op at ``tip`` (None: no commit, or no op there)."""
    from ..core import timeline

    if tip is None:
        return None
    found = timeline.entry(ws.repo, tip)
    return found.as_json() if found.op is not None else None


class Source(StrEnum):
    tool = "tool"
    script = "script"
    harness = "harness"
    external = "external"
    init = "init"
    transcript = "transcript"
    commit = "commit"


@declare(
    rev=Argument(metavar="REV", help=(
        "Where to start: a branch, a checkpoint, an op id (or the part of one log shows) or "
        "any git revision. Default: HEAD.")),
    n=Option("-n", "--max-count", min=1, help="How many entries."),
    skip=Option(min=0, help="Skip this many entries first."),
    agent=Option(help="Only ops by this agent."),
    session=Option(help=(
        "Only ops of this session: its id, or a unique start or end of it (the 8 characters "
        "a turn's checkpoint name shows).")),
    tool=Option(help="Only ops of this tool."),
    source=Option(type=Source, help=(
        "Only entries from this source: a tool call, a constraint script, another harness's "
        "tool (Claude Code...), an outside edit, the first commit, a committed transcript, or "
        "a commit that is no op.")),
    since=Option(help="Only entries after this date ('2 days ago', 2025-01-31)."),
    until=Option(help="Only entries before this date."),
    fmt=Option("--format", help=(
        "table (the default on a terminal), line (one line per entry: the default into a pipe) "
        "or a template such as '{op_short} {tool} {files}' (fields: gitspace log --format help).")),
    every=Option("--all", help=(
        "Every branch (and every line recorded in place), not only the current one.")),
    as_json=JSON,
)
def log(rev: str | None = None, n: int = 20, skip: int = 0, agent: str | None = None,
        session: str | None = None, tool: str | None = None, source: Source | None = None,
        since: str | None = None, until: str | None = None, fmt: str | None = None,
        every: bool = False, as_json: bool = False) -> None:
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
    with open_to_read() as ws:
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
    from ..agent import calltree

    return calltree.depths([e.op for e in entries], calltree.saved_parent(root))


def _log_format(fmt: str | None) -> str:
    if fmt is None:
        return "table" if sys.stdout.isatty() else "line"
    if fmt == "help":
        echo("--format takes table, line, or a template of these fields:\n" + "\n".join(
            f"  {{{name}}}  {what}" for name, what in lines.TEMPLATE_FIELDS.items()))
        raise SystemExit(0)
    if fmt in ("table", "line"):
        return fmt
    try:
        lines.check_template(fmt)
    except lines.BadTemplate as e:
        usage(str(e))
    return fmt


@declare(
    ref=Argument(metavar="OP", help=(
        "An op id (or the part of one log shows), a checkpoint, a branch or any commit.")),
    stat=STAT,
    as_json=JSON,
)
def show(ref: str, stat: bool = False, as_json: bool = False) -> None:
    """One op or commit: its record and its diff."""
    from ..storage.objects import EMPTY_TREE

    with open_to_read() as ws:
        entry = find_entry(ws, ref)
        if as_json:
            emit_json(entry.as_json(), "show")
            return
        parent = entry.parents[0] if entry.parents else EMPTY_TREE
        diff = ["--stat"] if stat else ["--stat", "-p"]
        with paged(state.pager) as stream:
            stream.write(lines.visible("\n".join(lines.op_detail(entry))) + "\n")
            stream.flush()  # (before git's bytes, which the same stream carries next)
            write_raw(ws.repo.git("diff", *_color(), *diff, parent, entry.commit), stream)


@declare(
    a=Argument(metavar="A", help=(
        "An op, checkpoint, branch or revision (none: the changes not recorded yet).")),
    b=Argument(metavar="B", help="The other side (default: HEAD)."),
    stat=STAT,
)
def diff(a: str | None = None, b: str | None = None, stat: bool = False) -> None:
    """The diff from A to B (ops, checkpoints, branches or revisions); with no A, the changes
    made outside gitspace that are not recorded yet, as 'gitspace snapshot' would record them."""
    with open_to_read() as ws:
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
        with paged(state.pager) as stream:
            write_raw(patch, stream)


def _unrecorded(ws: Any, stat: bool) -> None:
    """``gitspace diff`` alone: what is on disk and not recorded yet, against the tip."""
    from ..core import unrecorded

    here = in_place(ws)
    if here is not None:
        from ..harness.events import Options
        from ..harness.inplace.place import pending

        found = pending(ws.repo, Options(max_file_bytes=ws.max_file_bytes))
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
        with paged(state.pager) as stream:
            write_raw(patch, stream)
    for note in skipped:
        echo(f"not recorded: {note}", err=True)


def _color() -> list[str]:
    return ["--color=always" if colour_on() else "--color=never"]


@declare(
    path=Argument(help="The file (relative to -C, or to the work tree)."),
    rev=Argument(metavar="REV", help=(
        "The revision to blame at (default: the work tree, uncommitted lines included).")),
    as_json=JSON,
)
def blame(path: str, rev: str | None = None, as_json: bool = False) -> None:
    """For each line: the agent call (harness, session, op, tool, time, the turn's prompt) or
    the person that wrote it, from the authorship notes (refs/notes/ai)."""
    import gc

    from ..storage.gitrepo import GitRepo

    gc.disable()  # (a line is a few objects, none in a cycle: collecting found nothing, slowly)
    repo = GitRepo.locate(Path(state.directory))  # (an ordinary checkout: found, no git asked)
    try:
        rel = relative(repo, path)
        started = repo.start_blame(rel, rev)  # (git blames while the rest is loaded)
        from ..provenance import blame as blaming
        from ..provenance.sessions import Transcripts

        found = blaming.blame(repo, rel, rev, Transcripts(repo.gitdir), started)
    finally:
        repo.close()
    if as_json:
        if state.json_fields is None:
            echo(blame_json(found))
        else:
            emit_json([line.as_json() for line in found], "blame")
        return
    last: tuple[object, ...] | None = None
    width = len(str(len(found)))
    shown = []
    for line in found:
        group = (line.commit, line.key, line.author)
        if group != last:
            shown.append(_heading(line))
            last = group
        shown.append(f"  {line.line:>{width}} | {line.text}")
    if shown:
        echo("\n".join(shown))


def blame_json(found: list[Any]) -> str:
    """``jsonout.dumps`` of the lines' ``as_json()``, exactly, written a group at a time: the
    lines of one commit and key differ only in their number and text, so the rest of them is
    encoded once (the whole of it a line at a time was most of a long file's blame)."""
    import json
    from json.encoder import encode_basestring as text_of  # (C: ensure_ascii=False's own)
    from operator import attrgetter

    from ..provenance.blame import FIELDS

    assert FIELDS[:2] == ["line", "text"]
    rest_of = attrgetter(*FIELDS[2:])
    rest = json.JSONEncoder(ensure_ascii=False, separators=(",\n    ", ": ")).encode
    encoded: dict[tuple[object, ...], str] = {}
    out = []
    for line in found:
        values = rest_of(line)
        tail = encoded.get(values)
        if tail is None:
            if not all(v is None or type(v) in (str, int) for v in values) \
                    or type(line.line) is not int or type(line.text) is not str:
                return jsonout.dumps([each.as_json() for each in found])
            tail = encoded[values] = rest(dict(zip(FIELDS[2:], values, strict=True)))[1:-1]
        out.append(f'  {{\n    "line": {line.line},\n    "text": {text_of(line.text)},\n    '
                   f"{tail}\n  }}")
    return "[\n" + ",\n".join(out) + "\n]" if out else "[]"


def _heading(line: Any) -> str:
    import time

    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(line.time)) if line.time else ""
    commit = "uncommitted" if set(line.commit) == {"0"} else line.commit[:10]
    if line.kind == "person":
        return f"{commit}  {line.author} (person)  {when}"
    parts = [f"{commit}  {line.author}"]
    if line.session:
        parts.append(f"session {line.session[:8]}")
    if line.op:
        parts.append(f"op {line.op} {line.tool or ''}".rstrip())
    if line.model:
        parts.append(line.model)
    parts.append(when)
    if line.prompt:
        import json

        parts.append(json.dumps(line.prompt, ensure_ascii=False))
    return "  ".join(p for p in parts if p)


# Every read command (``gitspace --help`` lists them by ``commands.SECTIONS``).
READS: dict[str, Command] = {"status": status, "log": log, "show": show, "diff": diff,
                             "blame": blame}
