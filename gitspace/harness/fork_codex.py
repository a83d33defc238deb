"""Forking a Codex session at one call: its rollout copied up to that call's output.

Codex (0.171, measured with the real binary) keeps a session as a rollout, JSON lines in
``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl``, the file its hooks name
as ``transcript_path``. The first line is ``session_meta`` (``payload.id``: the session); each
later line is an ``event_msg``, a ``turn_context`` or a ``response_item``, whose payloads are
the Responses API's items: a call is a ``custom_tool_call`` (``apply_patch``) or a
``function_call`` (``exec_command``), its result the ``custom_tool_call_output`` or
``function_call_output`` with the same ``call_id`` (the hooks' ``tool_use_id``). Besides the
rollouts Codex keeps SQLite indexes of its threads; a rollout they do not list yet is found by
its file name and indexed when it is resumed (``codex resume ID``, ``codex exec resume ID``).

A fork is a new rollout beside the original, its name the original's with the new session id,
holding the original's lines up to and including the chosen call's output, with every value
that is the session id (``session_meta``'s ids, each payload's ``thread_id`` and
``session_id``) set to the new one. Refused rather than guessed: a session id that is no UUID;
a rollout that does not open with this session's ``session_meta``; the call absent (folded away
by a compaction, the rollout edited or cut short), present more than once, or of another kind
than its op records; its output absent or present more than once; a copied line that is not a
JSON object or names another session; a call of the copied lines left without its output
(parallel calls: fork at the last of them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .forkcut import HINT, Cut, Refused, check_uuid, dump_line, only, parse_lines, refuse_broken, uuid7

CALLS = ("custom_tool_call", "function_call", "local_shell_call")
OUTPUTS = ("custom_tool_call_output", "function_call_output")
new_session = uuid7  # Codex's session ids are time-ordered UUIDs


def check_session(session: str) -> None:
    check_uuid(session, "Codex")


def check_path(path: Path, session: str) -> None:
    """Refuse a transcript path that is not Codex's rollout of ``session``."""
    name = path.name
    if not path.is_absolute() or not (name.startswith("rollout-")
                                      and name.endswith(f"-{session}.jsonl")):
        raise Refused(f"The hooks recorded {str(path)[:200]!r} as the transcript of session "
                      f"{session}, which is not Codex's rollout of it (rollout-…-{session}.jsonl).",
                      hint="Fork where the session ran, with gitspace's hooks installed.")


def cut(data: bytes, session: str, use_id: str, tool: str, new: str,
        name: str = "") -> Cut:
    """The rollout of session ``new``: ``data`` (the rollout of ``session``, file ``name``) up to
    the output of call ``use_id`` (a ``tool`` call), as the module docstring says."""
    check_session(session)
    check_session(new)
    entries = parse_lines(data)
    meta = entries[0] if entries else None
    if not isinstance(meta, dict) or meta.get("type") != "session_meta" or \
            _payload(meta).get("id") != session:
        raise Refused(f"The rollout does not begin with session {session}'s own record, so it "
                      "is not that session's (or it was edited).", hint=HINT)
    compacted = any(isinstance(e, dict) and e.get("type") == "compacted" for e in entries)
    call = only(entries, lambda e: _is(e, CALLS, use_id), f"The call {use_id}",
                "a compaction folded it away (the rollout holds the summary that replaced it)"
                if compacted else "the rollout was edited or cut short", "rollout")
    kind = _payload(entries[call]).get("name")
    if (tool == "apply_patch") != (kind == "apply_patch"):
        raise Refused(f"The rollout's call {use_id} is a {str(kind)[:40]} call, but its op "
                      f"records {tool}: the rollout was edited.", hint=HINT)
    output = only(entries[call + 1:], lambda e: _is(e, OUTPUTS, use_id),
                  f"The output of call {use_id}", "the session stopped before the call finished, "
                  "or the rollout was edited", "rollout") + call + 1
    kept = entries[:output + 1]
    _check(kept, session)
    _answered(kept, use_id)
    out = [dump_line(_renamed(e, session, new)) for e in kept if isinstance(e, dict)]
    cwd = _payload(meta).get("cwd")
    new_name = name.replace(f"-{session}.jsonl", f"-{new}.jsonl") if name else \
        f"rollout-{new}.jsonl"
    return Cut(b"\n".join(out) + b"\n", new_name, new, f"codex resume {new}",
               cwd if isinstance(cwd, str) else None)


def _payload(entry: Any) -> dict[str, Any]:
    found = entry.get("payload") if isinstance(entry, dict) else None
    return found if isinstance(found, dict) else {}


def _is(entry: Any, kinds: tuple[str, ...], use_id: str) -> bool:
    p = _payload(entry)
    return entry.get("type") == "response_item" and p.get("type") in kinds \
        and p.get("call_id") == use_id if isinstance(entry, dict) else False


def _check(kept: list[Any], session: str) -> None:
    for n, entry in enumerate(kept):
        refuse_broken(n, entry, "rollout")
        p = _payload(entry)
        ids = [p.get(k) for k in ("thread_id", "session_id") if k in p]
        if entry is not None and entry.get("type") == "session_meta":
            ids.append(p.get("id"))
        if any(i != session for i in ids):
            raise Refused(f"Line {n + 1} of the rollout names another session than {session}: "
                          "the rollout was edited.", hint=HINT)


def _answered(kept: list[Any], use_id: str) -> None:
    """Refuse a fork that would leave a copied call without its output."""
    outputs = {_payload(e).get("call_id") for e in kept if isinstance(e, dict)
               and e.get("type") == "response_item" and _payload(e).get("type") in OUTPUTS}
    pending = [_payload(e).get("call_id") for e in kept if isinstance(e, dict)
               and e.get("type") == "response_item" and _payload(e).get("type") in CALLS
               and _payload(e).get("call_id") not in outputs]
    if pending:
        raise Refused(f"Call {use_id} ran together with {', '.join(str(p)[:40] for p in pending[:5])}"
                      ", whose outputs come after its own: a fork there would leave those calls "
                      "without outputs.", hint="Fork at the op of the last of those calls.")


def _renamed(value: Any, old: str, new: str) -> Any:
    """``value`` with every string that is exactly ``old`` made ``new``."""
    if isinstance(value, dict):
        return {k: _renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    return new if value == old else value
