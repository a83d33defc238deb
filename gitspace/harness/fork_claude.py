"""Forking a Claude Code session at one call: its transcript copied up to that call's result.

Claude Code keeps a session as JSON lines, ``<session id>.jsonl`` in its project folder (see
``transcripts``); message entries (``user``, ``assistant``, ``attachment``, ``system``) name
their ``parentUuid``, and ``claude --resume ID`` continues the conversation that ends at the
file's last message entry. A fork is a new file ``<new id>.jsonl`` in the same folder holding the
original's lines up to and including the ``user`` entry that holds the chosen call's
``tool_result``, every ``sessionId`` set to the new id: its conversation ends with that result.

As Claude Code 2.1 writes them (measured with the real binary): each block of a reply is an
entry of its own, chained one after the other, and each result hangs on its own call's entry,
so the results of parallel calls are siblings rather than a chain. A compaction appends a
``compact_boundary`` entry and the summary after it and keeps every earlier line: a fork at a
call before it is the conversation as it was then, uncompacted.

What is refused rather than guessed (the transcript is read as the person's data, which any
editor can have changed):
- a session id that is no UUID (Claude Code's own ids are; anything else may name a path);
- the call absent (folded away by a compaction that dropped it, the transcript edited or cut
  short, or the call made by a subagent, whose calls live in a file of their own), present more
  than once, or under another tool's name than its op records;
- its result absent (the session stopped before the call finished), or present more than once;
- a result whose chain of ``parentUuid`` does not lead back through the call to the start of the
  conversation (or a compaction's boundary), every link on the copied lines: the lines were
  reordered or forged;
- a copied line that is not a JSON object, or that names another session;
- a call made together with others in one reply whose results come after its own: the fork
  would hold calls without results (fork at the reply's last call instead).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .forkcut import (
    HINT,
    Cut,
    Refused,
    blocks,
    check_uuid,
    dump_line,
    new_uuid4,
    only,
    parse_lines,
    refuse_broken,
)

new_session = new_uuid4  # Claude Code's session ids are random UUIDs


def check_session(session: str) -> None:
    check_uuid(session, "Claude Code")


def check_path(path: Path, session: str) -> None:
    """Refuse a transcript path that is not Claude Code's file for ``session``."""
    if not path.is_absolute() or path.name != f"{session}.jsonl":
        raise Refused(f"The hooks recorded {str(path)[:200]!r} as the transcript of session "
                      f"{session}, which is not Claude Code's file for it ({session}.jsonl).",
                      hint="Fork where the session ran, with gitspace's hooks installed.")


def cut(data: bytes, session: str, use_id: str, tool: str, new: str, name: str = "") -> Cut:
    """The transcript of session ``new``: ``data`` (the transcript of ``session``, whose file
    name is always ``<session>.jsonl``) up to the result of call ``use_id`` (a ``tool`` call),
    as the module docstring says."""
    check_session(session)
    check_session(new)
    entries = parse_lines(data)
    compacted = any(isinstance(e, dict) and e.get("subtype") == "compact_boundary"
                    for e in entries)
    call = only(entries, lambda e: _holds(e, "assistant", "tool_use", "id", use_id),
                f"The call {use_id}", "a compaction folded it away (the transcript holds the "
                "summary that replaced it)" if compacted else "the transcript was edited or cut "
                "short, or the call ran in a subagent, whose calls Claude Code keeps in a file of "
                "their own", "transcript")
    made = next(b.get("name") for b in blocks(entries[call].get("message"))
                if b.get("type") == "tool_use" and b.get("id") == use_id)
    if made != tool:
        raise Refused(f"The transcript's call {use_id} is a {made!s:.40} call, but its op "
                      f"records {tool}: the transcript was edited.", hint=HINT)
    result = only(entries[call + 1:],
                  lambda e: _holds(e, "user", "tool_result", "tool_use_id", use_id),
                  f"The result of call {use_id}", "the session stopped before the call finished, "
                  "or the transcript was edited", "transcript") + call + 1
    kept = entries[:result + 1]
    for n, entry in enumerate(kept):
        refuse_broken(n, entry, "transcript")
        if isinstance(entry, dict) and entry.get("sessionId", session) != session:
            raise Refused(f"Line {n + 1} of the transcript names session "
                          f"{str(entry.get('sessionId'))[:40]!r}, not {session}: the transcript "
                          "was edited.", hint=HINT)
    _chain(kept, result, call)
    _siblings(kept, call, use_id)
    out = []
    for entry in kept:
        if isinstance(entry, dict):
            out.append(dump_line({**entry, "sessionId": new} if "sessionId" in entry else entry))
    cwd = kept[result].get("cwd")
    return Cut(b"\n".join(out) + b"\n", f"{new}.jsonl", new, f"claude --resume {new}",
               cwd if isinstance(cwd, str) else None)


def _holds(entry: Any, kind: str, block: str, key: str, value: str) -> bool:
    return isinstance(entry, dict) and entry.get("type") == kind and any(
        b.get("type") == block and b.get(key) == value for b in blocks(entry.get("message")))


def _chain(kept: list[Any], result: int, call: int) -> None:
    """Refuse unless the conversation that ends at line ``result`` runs through line ``call``
    back to its start (or to a compaction's boundary) on lines that are all kept."""
    where: dict[str, int] = {}
    for n, entry in enumerate(kept):
        uuid = entry.get("uuid") if isinstance(entry, dict) else None
        if isinstance(uuid, str):
            if uuid in where:
                raise Refused(f"Lines {where[uuid] + 1} and {n + 1} of the transcript share the "
                              f"entry id {uuid}: it was edited.", hint=HINT)
            where[uuid] = n
    chain, at = [], result
    while True:
        chain.append(at)
        parent = kept[at].get("parentUuid")
        if parent is None:
            break
        if not isinstance(parent, str) or where.get(parent, at) >= at:
            raise Refused(f"Line {at + 1} of the transcript continues an entry that is not "
                          "before it: the lines were edited or reordered, so the conversation "
                          "cannot be followed back.", hint=HINT)
        at = where[parent]
    if call not in chain:
        raise Refused("The call's result does not follow the call in the transcript's "
                      "conversation: the lines were edited.", hint=HINT)


def _siblings(kept: list[Any], call: int, use_id: str) -> None:
    """Refuse a fork that would leave a call of the same reply without its result. (Claude Code
    writes each block of a reply as an entry of its own, chained one after the other, and hangs
    each result on its own call's entry: results of parallel calls are siblings, not a chain.)"""
    reply = (kept[call].get("message") or {}).get("id")
    if reply is None:
        return
    answered = {b.get("tool_use_id") for e in kept if isinstance(e, dict)
                for b in blocks(e.get("message")) if b.get("type") == "tool_result"}
    pending = [b.get("id") for e in kept if isinstance(e, dict) and e.get("type") == "assistant"
               and (e.get("message") or {}).get("id") == reply
               for b in blocks(e.get("message"))
               if b.get("type") == "tool_use" and b.get("id") not in answered]
    if pending:
        raise Refused(f"Call {use_id} was made in one reply together with "
                      f"{', '.join(str(p)[:40] for p in pending[:5])}, whose results come after "
                      "its own: a fork there would leave those calls without results.",
                      hint="Fork at the op of the reply's last call.")
