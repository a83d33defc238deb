"""``gitspace record``: one JSON object on stdin describing one tool call of any harness.

Fields: ``tool`` (required), ``args`` (an object), ``agent``, ``session``, ``tool_use_id``,
``paths`` (the files the call wrote; omit it when the call may have changed anything, as a shell
command may), ``cwd`` (default: the current folder), and ``phase``: ``after`` (default: the call
has run; record what it changed), ``before`` (it is about to run: record outside changes first,
so they are not folded into it) or ``failed`` (it failed; recorded only if it changed files).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..storage import ledger
from .events import Call, Event, ignored, mapping, text

AGENT = "harness"
PHASES = ("before", "after", "failed")


def event(payload: Mapping[str, Any]) -> Event:
    agent = text(payload, "agent") or AGENT
    tool = text(payload, "tool")
    if tool is None:
        return ignored(agent, "The record has no tool name (field 'tool').", payload)
    if not ledger.HARNESS_TOOL_NAME.fullmatch(tool):
        return ignored(agent, f"The tool name {tool[:80]!r} is not allowed: use 1-64 letters, "
                              "digits, '_', '.' or '-', starting with a letter.", payload)
    if not ledger.TOKEN.fullmatch(agent):
        return ignored(AGENT, f"The agent name {agent[:80]!r} is not allowed: use letters, "
                              "digits and ._:@+=/- only.", payload)
    args = mapping(payload, "args") if "args" in payload else {}
    if args is None:
        return ignored(agent, "The record's 'args' is not a JSON object.", payload)
    phase = text(payload, "phase") or "after"
    if phase not in PHASES:
        return ignored(agent, f"The record's phase {phase!r} is not one of {', '.join(PHASES)}.",
                       payload)
    paths = payload.get("paths")
    if paths is not None and not (isinstance(paths, list) and paths
                                  and all(isinstance(p, str) and p for p in paths)):
        return ignored(agent, "The record's 'paths' is not a list of file paths.", payload)
    call = Call(tool, args, tuple(paths) if paths else None, text(payload, "tool_use_id"),
                text(payload, "error"))
    return Event(phase, agent, cwd=text(payload, "cwd"), session=text(payload, "session"),
                 call=call)
