"""Codex CLI's hooks (``.codex/hooks.json``, the same layout as Claude Code's settings), as the
real binary sends them (``tests/harness/test_codex_wire.py``, Codex 0.171).

Every payload carries ``session_id``, ``transcript_path`` (Codex's rollout file of the session),
``cwd``, ``hook_event_name``, ``model`` and ``permission_mode``; turn events add ``turn_id`` (used
as the prompt id). Tool events add ``tool_name``, ``tool_input`` and ``tool_use_id`` (Codex's
call id); PostToolUse adds ``tool_response``, a plain string. The tools recorded:

- ``Bash`` (Codex's ``exec_command``; the command in ``tool_input.command``) and ``apply_patch``
  (the patch in ``tool_input.command``): neither names its files in a fixed field, so both
  count as commands whose effect is whatever changed while they ran;
- MCP tools (``mcp__<server>__<tool>``): a server may write files, so they count the same way,
  each with Codex's call id. Codex 0.171 offers a model MCP tools only through its
  ``tool_search``, in a namespace ``mcp__<server>``; the hook names them
  ``mcp__<server>__<tool>``, and its result is an object.

What Codex does not say, and how it is told:
- a command that failed gets ``"tool_response": ""``, as one that succeeded does; Codex's
  transcript already holds its exit code when PostToolUse runs, so it is read from there
  (``tail.codex_exit_code``), and a non-zero code makes the call ``failed``. An
  ``apply_patch`` result starts with ``Exit code: N``.
- a failed ``apply_patch`` (a patch that does not apply), an MCP call whose result is an error,
  and a command still running when Codex hands back, get a PreToolUse and no PostToolUse.
- ``Interrupt`` (a person stopping a turn) ends the turn as ``Stop`` does: calls of the session
  still announced then never finish, and what they changed is recorded at once.

Codex runs a hook only once someone trusted it (``codex_trust.py``), and project hooks only in a
trusted project. User hooks (``~/.codex/hooks.json``) load in every project.
"""

from __future__ import annotations

import re

from ..storage.records import replace
from .events import Call, Event, ignored, text, tool_call
from .spec import HookSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

AGENT = "codex"
TOOLS = ("Bash", "apply_patch")
MCP = "mcp__"
MATCHER = "^(" + "|".join(TOOLS) + "|" + MCP + ".*)$"
TOOL_EVENTS = {"PreToolUse": "before", "PostToolUse": "after"}
TURN_ENDS = ("Stop", "Interrupt")
_PATCH_EXIT = re.compile(r"Exit code: (-?\d+)")

SPEC = HookSpec(
    name=AGENT, title="Codex", style="matchers",
    events=(("PreToolUse", MATCHER), ("PostToolUse", MATCHER), ("UserPromptSubmit", None),
            ("Stop", None), ("Interrupt", None)),
    files=(("project", ".codex/hooks.json"), ("user", "~/.codex/hooks.json")),
    timeouts=(("Interrupt", 3),),  # Codex cuts an Interrupt hook to 3 s, and says so each run
    forker="fork_codex",
)


def event(payload: Mapping[str, Any]) -> Event:
    name = text(payload, "hook_event_name")
    common: dict[str, Any] = {
        "agent": AGENT, "cwd": text(payload, "cwd"), "session": text(payload, "session_id"),
        "transcript": text(payload, "transcript_path"), "prompt_id": text(payload, "turn_id"),
    }
    if name in TOOL_EVENTS:
        tool = text(payload, "tool_name") or ""
        found = tool_call(AGENT, payload, {}, (*TOOLS, tool) if tool.startswith(MCP) else TOOLS)
        if isinstance(found, Event):
            return found
        failure = _failure(payload, found, common) if name == "PostToolUse" else None
        if failure is not None:
            return Event("failed", call=replace(found, error=failure), **common)
        return Event(TOOL_EVENTS[name], call=found, **common)
    if name == "UserPromptSubmit":
        return Event("prompt", **common)
    if name in TURN_ENDS:
        return Event("stop", **common)
    return ignored(AGENT, f"gitspace does not use the {name} event.", payload)


def _failure(payload: Mapping[str, Any], call: Call, common: dict[str, Any]) -> str | None:
    """Why a finished call failed, when Codex says so somewhere; None when it succeeded (or
    nothing says it did not)."""
    response = payload.get("tool_response")
    if call.tool == "apply_patch":
        found = _PATCH_EXIT.match(response) if isinstance(response, str) else None
        return f"exit code {found.group(1)}" if found and found.group(1) != "0" else None
    if call.tool != "Bash":
        return None
    from .tail import codex_exit_code

    code = codex_exit_code(common["transcript"], common["session"], call.use_id)
    return f"exit code {code}" if code else None
