"""The resources an MCP client reads: their URIs, templates and bounded texts.

Invariant: every text is bounded (the log shows at most LOG_LIMIT entries, a file at most what
``view`` shows, a past file the same cap) and read-only: no resource ever locks or commits. A URI
that names nothing is a ``ResourceMissing`` that lists what there is; a path in a URI goes through
the same path policy as every tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import unquote

from ..core import branches, checkpoints, lookup, paths, timeline
from ..core.result import Result
from ..core.workspace import Workspace
from ..errors import FileRefused, GitspaceError, NotFound
from ..storage import ledger
from ..tools.text import VIEW_CAP, decode, numbered

SCHEME = "gitspace://"
LOG_URI = SCHEME + "log"
CHECKPOINTS_URI = SCHEME + "checkpoints"
FILE_PREFIX = SCHEME + "file/"
OP_PREFIX = SCHEME + "op/"
CHECKPOINT_PREFIX = SCHEME + "checkpoint/"
BRANCH_PREFIX = SCHEME + "branch/"
LOG_LIMIT = 100


class ResourceMissing(GitspaceError):
    """The URI names no gitspace resource."""


@dataclass(frozen=True)
class Listed:
    """A resource or a resource template, as resources/list and resources/templates/list show it."""

    uri: str
    name: str
    description: str
    template: bool = False


RESOURCES = (
    Listed(LOG_URI, "log", f"The op timeline of the current branch, newest first (the last "
           f"{LOG_LIMIT} ops): time, op id, agent, tool, args, files. Subscribe to hear of every "
           "op that lands, whoever makes it."),
    Listed(CHECKPOINTS_URI, "checkpoints", "Every checkpoint: name, commit, branch, agent, time. "
           "Subscribe to hear when one is made."),
)
TEMPLATES = (
    Listed(FILE_PREFIX + "{path}", "file", "A workspace file with line numbers, or a folder "
           "listing, exactly as the view tool shows it (files over the view cap are refused: use "
           "view_range or the constraint tools). Subscribe to hear when an op changes it.", True),
    Listed(OP_PREFIX + "{op}", "op", "One op: its tool, args, agent, time, commit and the files "
           "it changed. {op} is an op id, or the 8 characters 'gitspace log' prints.", True),
    Listed(OP_PREFIX + "{op}/file/{path}", "file at an op", "A file as it was right after an op "
           "(line numbered, the view cap applies).", True),
    Listed(CHECKPOINT_PREFIX + "{name}", "checkpoint", "One checkpoint: its op, branch, agent, "
           "message and time.", True),
    Listed(BRANCH_PREFIX + "{name}", "branch", f"The op timeline of a branch, newest first (the "
           f"last {LOG_LIMIT} ops), as {LOG_URI} shows the current one.", True),
)
KNOWN = ", ".join([LOG_URI, CHECKPOINTS_URI, *(t.uri for t in TEMPLATES)])


def when(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read(ws: Workspace, uri: str) -> str:
    """The text of ``uri``; a GitspaceError (ResourceMissing for a URI that names nothing)."""
    if uri == LOG_URI:
        return log_text(ws)
    if uri == CHECKPOINTS_URI:
        return checkpoints_text(ws)
    if uri.startswith(FILE_PREFIX):
        return _shown(file_text(ws, uri))
    if uri.startswith(OP_PREFIX):
        op, sep, path = uri[len(OP_PREFIX):].partition("/file/")
        return file_at_text(ws, unquote(op), unquote(path)) if sep else op_text(ws, unquote(op))
    if uri.startswith(CHECKPOINT_PREFIX):
        return checkpoint_text(ws, unquote(uri[len(CHECKPOINT_PREFIX):]))
    if uri.startswith(BRANCH_PREFIX):
        return branch_text(ws, unquote(uri[len(BRANCH_PREFIX):]))
    raise missing(uri)


def missing(uri: str) -> ResourceMissing:
    return ResourceMissing(f"There is no gitspace resource {short(uri, 200)!r}.",
                           hint=f"The resources are {KNOWN}.")


def _shown(result: Result) -> str:
    if not result.ok:
        raise result.error if result.error is not None else GitspaceError(result.text)
    return result.text


def log_line(e: timeline.LogEntry) -> str:
    files = ", ".join(e.files[:3]) + (f" +{len(e.files) - 3}" if len(e.files) > 3 else "")
    if e.op:
        args = ledger.canonical_json(e.op.args)
        what = f"op {e.op.op_id}  agent {e.op.agent or '-'}  {e.op.tool} {short(args, 120)}"
    else:
        what = f"commit {e.commit[:12]}  author {e.author}  {short(e.subject, 120)}"
    marks = "".join(f"  [checkpoint {c}]" for c in e.checkpoints)
    problem = f"  [malformed: {short(e.problem, 120)}]" if e.problem else ""
    return f"{when(e.time)}  {what}  files: {files or '-'}{marks}{problem}"


def log_text(ws: Workspace, limit: int = LOG_LIMIT, branch: str | None = None) -> str:
    """The op timeline of a branch (default: the current one), newest first, one bounded line
    per entry."""
    entries = timeline.timeline(ws, limit, f"refs/heads/{branch}" if branch else None)
    lines = [f"Op log of branch {branch or ws.branch()}, newest first (at most {limit} entries):"]
    return "\n".join(lines + [log_line(e) for e in entries])


def branch_text(ws: Workspace, name: str) -> str:
    if not any(b.name == name for b in branches.listing(ws)):
        raise NotFound(f"There is no branch named {short(name, 100)!r}.",
                       hint="Completion lists the branches; the branch tool makes one.")
    return log_text(ws, branch=name)


def checkpoints_text(ws: Workspace) -> str:
    rows = checkpoints.listing(ws)
    if not rows:
        return "No checkpoints yet. The checkpoint tool saves one."
    lines = [f"{len(rows)} checkpoint(s), oldest first:"]
    lines += [f"{c.name}  commit {c.commit[:12]}  branch {c.branch}  agent {c.agent}  "
              f"{when(c.time)}  {short(c.message, 120)}" for c in rows]
    return "\n".join(lines)


def file_text(ws: Workspace, uri: str) -> Result:
    """What ``view`` shows for the path in a ``gitspace://file/{path}`` URI (same cap, same
    refusals). The path is percent-decoded once; paths.resolve refuses anything still encoded."""
    return ws.call("view", {"path": unquote(uri[len(FILE_PREFIX):])})


def op_text(ws: Workspace, text: str) -> str:
    found = lookup.resolve(ws.repo, lookup.op_id(ws.repo, text))
    e = timeline.entry(ws.repo, found.commit)
    assert e.op is not None  # (op_id found an op)
    op = e.op
    lines = [f"op {op.op_id}", f"tool: {op.tool}", f"args: {short(ledger.canonical_json(op.args), 2000)}",
             f"agent: {op.agent or '-'}", f"source: {e.source}", f"time: {when(e.time)}",
             f"commit: {e.commit}", f"subject: {short(e.subject, 200)}"]
    if op.undo_of:
        lines.append(f"undoes: {', '.join(op.undo_of)}")
    if e.checkpoints:
        lines.append(f"checkpoints here: {', '.join(e.checkpoints)}")
    shown = e.files[:200]
    lines.append(f"files changed ({len(e.files)}): " + (", ".join(shown) or "-")
                 + (f" and {len(e.files) - 200} more" if len(e.files) > 200 else ""))
    return "\n".join(lines)


def checkpoint_text(ws: Workspace, name: str) -> str:
    for c in checkpoints.listing(ws):
        if c.name == name:
            e = timeline.entry(ws.repo, c.commit)
            at = f"op {e.op.op_id} ({e.op.tool})" if e.op else f"commit {c.commit[:12]}"
            return (f"checkpoint {c.name}\nat: {at}\ncommit: {c.commit}\nbranch: {c.branch}\n"
                    f"agent: {c.agent}\ntime: {when(c.time)}\nmessage: {short(c.message, 500)}\n"
                    f"Restore it with the restore tool: {{\"name\": \"{c.name}\"}}.")
    raise NotFound(f"There is no checkpoint named {short(name, 100)!r}.",
                   hint=f"Read {CHECKPOINTS_URI} for the list.")


def file_at_text(ws: Workspace, op_text_: str, path: str) -> str:
    """A file as it was in the tree right after op ``op_text_``, numbered, under the view cap."""
    rel = paths.normalize(path)
    found = lookup.resolve(ws.repo, lookup.op_id(ws.repo, op_text_))
    entry = ws.repo.entry_at(ws.repo.commit(found.commit).tree, rel)
    if entry is None or entry.is_tree:
        raise NotFound(f"{rel} was not a file right after op {found.op_id}.",
                       hint=f"Read {OP_PREFIX}{found.op_id} for the files it changed.")
    data = ws.repo.read_blob(entry.sha)
    if len(data) > ws.max_file_bytes:
        raise FileRefused(f"{rel} was {len(data):,} bytes at op {found.op_id}, too large to show.")
    lines = decode(rel, data).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    body = numbered(lines, 1)
    if len(body) > VIEW_CAP:
        raise FileRefused(f"{rel} at op {found.op_id} takes {len(body):,} characters, over the "
                          f"{VIEW_CAP:,}-character view cap.",
                          hint="Restore or branch from that op and read it in pieces with view "
                          "and view_range or the constraint tools.")
    return f"{rel} right after op {found.op_id} ({len(lines)} lines):\n{body}"
