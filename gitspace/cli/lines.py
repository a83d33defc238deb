"""Timeline entries as plain lines: the compact format ``log`` prints into a pipe, and
``--format`` templates. No rich here: a piped ``gitspace log`` never loads it.

Invariant: one entry is exactly one line, whatever it holds. Nothing is cut to a width and
nothing is wrapped, so grep sees whole words; a newline or tab inside a value (a file name, a
hostile subject) is written as ``\\n`` / ``\\t``.
"""

from __future__ import annotations

import re
import time

from ..storage import ids, ledger

TYPE_CHECKING = False  # typing is not imported at run time: a read starts without it
if TYPE_CHECKING:
    from typing import Any

OP_SHORT = ledger.SHORT  # the op-id suffix gitspace shows everywhere (ledger.short_id)
TEMPLATE_FIELDS = {
    "time": "local time of the op (YYYY-MM-DD HH:MM:SS)",
    "timestamp": "seconds since the epoch",
    "op": "the full op id",
    "op_short": f"the last {OP_SHORT} characters of the op id, as log shows them",
    "commit": "the full commit id",
    "short": f"the first {ids.COMMIT} characters of the commit id",
    "agent": "who made it: the agent, or the person (their git user.name)",
    "tool": "the tool (ops) or 'commit'",
    "source": "tool, harness, external, init or transcript ('-' for other commits)",
    "session": "the session id ('-' if none)",
    "session_short": "the session's short form, s- and 8 characters, as listings show it",
    "failed": "why the harness call failed, as it said ('-' if it did not fail)",
    "parent": "the session that delegated the op's session ('-' if none)",
    "depth": "how many delegated calls deep the op was made (0: not delegated)",
    "tool_use_id": "the model's or harness's id of the tool call ('-' if none)",
    "args": "the arguments, summarised on one line",
    "args_json": "the arguments as canonical JSON",
    "files": "the files changed, comma-separated",
    "checkpoints": "checkpoint names at this op, comma-separated",
    "subject": "the commit's subject line",
}


# What a terminal would act on rather than show: C0 and C1 controls (ESC starts a sequence that
# moves the cursor, clears the screen, retitles the window or makes a link; CSI is one in C1)
# and the bidirectional overrides that show text in another order than it is.
_HIDDEN = "\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[{_HIDDEN}]")
_HIDDEN_ASCII = bytes([*range(0x09), *range(0x0b, 0x20), 0x7f])  # (_HIDDEN's ASCII part)
_LINE = re.compile(f"[\\\\\n\t{_HIDDEN}]")
# A colour as git's own diff writes one (bold, faint, reverse, red to white, and their
# backgrounds): no concealed or black text, so a colour kept from a file hides none of it.
_SGR = re.compile("\x1b\\[(?:(?:[0127]|3[1-7]|4[1-7])(?:;(?:[0127]|3[1-7]|4[1-7]))*)?m")
_NAMED = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _spelled(found: re.Match[str]) -> str:
    c = found.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def one_line(text: str) -> str:
    """``text`` on one line a terminal only shows: a backslash, newline or tab, and every
    character it would act on (``_HIDDEN``), spelled as an escape."""
    return _LINE.sub(_spelled, text)


def visible(text: str) -> str:
    """``text`` (lines kept) as a terminal only shows it: every character it would act on
    spelled as an escape, so text from history never moves the cursor or hides a line."""
    if text.isascii():  # (known without a scan: ASCII holds only the C0 controls and DEL,
        data = text.encode("ascii")  # which bytes.translate finds many times faster than re)
        if len(data.translate(None, _HIDDEN_ASCII)) == len(data):
            return text
    return _CONTROL.sub(_spelled, text)


def for_terminal(text: str) -> str:
    """Output git wrote (a diff, with its colours) for a terminal: its colours kept, every other
    character a terminal would act on spelled (a file's content may hold any)."""
    kept = _SGR.split(text)
    colours = _SGR.findall(text)
    return "".join(visible(part) + (colours[i] if i < len(colours) else "")
                   for i, part in enumerate(kept))


def when(ts: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def values(e: Any, depth: int = 0) -> dict[str, str]:
    """Every template field of one entry, each already on one line."""
    op = e.op
    raw = {
        "time": when(e.time), "timestamp": str(e.time),
        "op": op.op_id if op else "-", "op_short": short(e),
        "commit": e.commit, "short": ids.commit(e.commit),
        "agent": e.agent,
        "tool": op.tool if op else "commit",
        "source": op.source if op else "-",
        "session": (op.session or "-") if op else "-",
        "session_short": ids.session(op.session) if op and op.session else "-",
        "failed": e.failed if e.failed is not None else "-",
        "parent": (op.parent_session or "-") if op else "-",
        "depth": str(depth),
        "tool_use_id": (op.tool_use_id or "-") if op else "-",
        "args": ledger.args_summary(op.args, 10_000) if op else e.subject,
        "args_json": ledger.canonical_json(op.args) if op else "{}",
        "files": ",".join(e.files), "checkpoints": ",".join(e.checkpoints),
        "subject": e.subject,
    }
    return {k: one_line(v) for k, v in raw.items()}


def called(tool: str, depth: int) -> str:
    """A tool as the call tree shows it: under the call that delegated it, one step per level."""
    return tool if depth <= 0 else "  " * (depth - 1) + "↳ " + tool


def short(e: Any) -> str:
    """What names an entry in a listing: an op's short form, else the commit's (``ids``)."""
    return str(e.short)


def compact(e: Any, depth: int = 0) -> str:
    """The line ``log`` prints into a pipe: time, op, agent, tool, args, files, checkpoints.
    An op a delegated agent made shows its tool under the call (``called``)."""
    v = values(e, depth)
    parts = [v["time"], v["op_short"], v["agent"], called(v["tool"], depth), v["args"]]
    parts.append(f"files: {v['files'].replace(',', ', ')}" if e.files else "files: -")
    if e.checkpoints:
        parts.append(f"checkpoint: {v['checkpoints'].replace(',', ', ')}")
    if e.op is not None and e.op.tool_use_id:
        parts.append(f"tool_use_id: {v['tool_use_id']}")
    if e.failed is not None:
        parts.append(f"failed: {v['failed']}")
    if e.problem:
        parts.append(f"malformed: {one_line(e.problem)}")
    return "  ".join(parts)


# What a terminal would act on rather than show (bell, backspace, vertical tab, form feed,
# carriage return): ``show`` drops them from a record's text, as rich did when it drew it.
_CONTROLS = dict.fromkeys((7, 8, 11, 12, 13))


def op_detail(e: Any) -> list[str]:
    """``show``'s record of one entry (the diff follows it), plain lines."""
    out = [f"commit {e.commit}  {when(e.time)}  {e.agent}", e.subject]
    op = e.op
    if op is None:
        return [line.translate(_CONTROLS).expandtabs(8) for line in out]
    out.append(f"op {e.short} ({op.op_id})  tool {op.tool}  source {op.source}  agent {e.agent}")
    if op.session or op.tool_use_id:
        named = f"{ids.session(op.session)} ({op.session})" if op.session else "-"
        out.append(f"session {named}  tool_use_id {op.tool_use_id or '-'}")
    if e.failed is not None:
        out.append(f"failed: {e.failed} (the changes it left are recorded)")
    out.append(f"args {ledger.args_summary(op.args, 200)}")
    if op.undo_of:
        out.append(f"undoes {', '.join(ledger.short_id(u) for u in op.undo_of)}")
    if op.redo_of:
        out.append(f"redoes {ledger.short_id(op.redo_of)}")
    return [line.translate(_CONTROLS).expandtabs(8) for line in out]


class BadTemplate(ValueError):
    """A --format template with an unknown field or a malformed brace."""


def check_template(template: str) -> None:
    import string  # (here: only a --format template needs it)

    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as e:
        raise BadTemplate(f"--format {template!r} is not a valid template: {e}.") from None
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in TEMPLATE_FIELDS or conversion or "{" in (spec or ""):
            raise BadTemplate(f"--format has no field {{{name}}}. Fields: "
                              + ", ".join(f"{{{k}}}" for k in TEMPLATE_FIELDS) + ".")


def render_template(template: str, e: Any, depth: int = 0) -> str:
    """One entry through a checked template (a value never adds a line; the template may)."""
    try:
        return template.format_map(values(e, depth))
    except ValueError as error:  # a format spec that does not fit a string, e.g. {tool:d}
        raise BadTemplate(f"--format {template!r} cannot be applied: {error}.") from None


def _status_in_place(data: dict[str, Any]) -> list[str]:
    where = f"branch {data['branch']}" if data["branch"] else "a detached HEAD"
    out = [f"Your own checkout {data['root']}, on {where} at {data['tip'][:12]}."]
    who = ", ".join(data["recording"]) or "no harness ('gitspace hooks install NAME' turns it on)"
    out.append(f"Recording in place: {who}; ops on {data['line']}"
               + ("." if data["line_tip"] else " (none yet)."))
    last = data.get("last_op")
    if last is not None:
        out.append(f"Last recorded, {when(last['time'])}: {recorded(last)} (op "
                   f"{last['op']['short']}).")
    if data["pending"]:
        out.append(f"Since then, {len(data['pending'])} change(s) not recorded yet (the agent's "
                   "next shell command or turn records them as yours, or 'gitspace snapshot' "
                   "now):")
        out += [f"  {one_line(path)}" for path in data["pending"][:50]]
        if len(data["pending"]) > 50:
            out.append(f"  ... and {len(data['pending']) - 50} more ('gitspace status --json' "
                       "lists them all)")
    elif last is not None:
        out.append("Nothing changed since: the work tree is as that op left it.")
    out += [f"not recorded: {one_line(note)}" for note in data["too_large"]]
    return out


def recorded(entry: dict[str, Any]) -> str:
    """What the op of a log entry (as JSON) recorded, in a sentence for people."""
    op = entry["op"]
    files = entry["files"]
    listed = ", ".join(one_line(f) for f in files[:3]) + (f" and {len(files) - 3} more"
                                                         if len(files) > 3 else "")
    if op["tool"] == "follow":
        args = op["args"]
        what = ("your checkout as 'gitspace hooks install' found it" if entry.get("line_start")
                else "your checkout after it moved (a commit, switch, rebase, stash or reset)")
        kept = (f", with {len(files)} uncommitted or untracked file(s) recorded as they were "
                f"({listed})" if files else ", nothing uncommitted")
        return f"{what}: {args.get('branch') or 'HEAD'} at {str(args.get('commit'))[:12]}{kept}"
    if op["source"] == "harness":
        failed = f", which failed ({one_line(op['failed'])})" if op.get("failed") else ""
        return (f"{op['agent']}'s {op['tool']} call{failed}, session {op['session_short']}: "
                f"{one_line(entry['subject'])}")
    if op["source"] == "external":
        return f"your own edits of {len(files)} file(s) ({listed})"
    return f"{one_line(entry['subject'])}, by {entry['agent']}"


def status(data: dict[str, Any]) -> list[str]:
    """``gitspace status`` for people, as plain lines (no rich: status answers fast)."""
    out = [f"Workspace {data['root']}"]
    if data["tip"] is None:
        return [*out, f"On branch {data['branch'] or '?'}, with no commit yet."]
    if data.get("in_place"):
        return _status_in_place(data)
    if data["detached"]:
        out.append(f"HEAD detached at {data['tip'][:12]} (read-only: ops need a branch; "
                   "'gitspace switch BRANCH' picks one).")
    else:
        out.append(f"On branch {data['branch']} at {data['tip'][:12]}")
    if data.get("own"):
        out[0] = f"Your own checkout {data['root']}"
        out.append("gitspace records nothing here yet: 'gitspace hooks install claude-code' "
                   "records an agent's calls in place (nothing of yours moves).")
        return out
    if data["pending"]:
        out.append(f"{len(data['pending'])} outside change(s) not yet recorded "
                   "(run 'gitspace snapshot'):")
        out += [f"  {one_line(path)}" for path in data["pending"][:50]]
        if len(data["pending"]) > 50:
            out.append(f"  ... and {len(data['pending']) - 50} more ('gitspace status --json' "
                       "lists them all)")
    else:
        out.append("No outside changes: the work tree matches the last op.")
    out += [f"not recorded: {one_line(note)}" for note in data["too_large"]]
    return out
