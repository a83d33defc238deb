"""Codex CLI's hooks (``.codex/hooks.json``, the same layout as Claude Code's settings).

Codex documents a JSON object on stdin per event (its generated input schemas): every event has
``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``, ``model``, ``permission_mode``;
PreToolUse/PostToolUse add ``turn_id``, ``tool_name``, ``tool_input``, ``tool_use_id`` (and
``tool_response``); UserPromptSubmit adds ``turn_id`` and ``prompt``; Stop adds ``turn_id``.
Tool hooks fire for ``Bash`` (``tool_input.command``) and ``apply_patch`` (the patch body in
``tool_input.command``); neither names its files in a fixed field, so both count as commands
whose effect is whatever changed while they ran. Used here: event name, session, cwd,
transcript path, turn id (as the prompt id), tool name, tool input, tool-use id. Project hooks
load only when the project is trusted by Codex; user hooks (``~/.codex/hooks.json``) always do.
"""

from __future__ import annotations

from .events import Event, ignored, text, tool_call
from .spec import HookSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

AGENT = "codex"
TOOLS = ("Bash", "apply_patch")
MATCHER = "^(" + "|".join(TOOLS) + ")$"
TOOL_EVENTS = {"PreToolUse": "before", "PostToolUse": "after"}

SPEC = HookSpec(
    name=AGENT, title="Codex", style="matchers",
    events=(("PreToolUse", MATCHER), ("PostToolUse", MATCHER), ("UserPromptSubmit", None),
            ("Stop", None)),
    files=(("project", ".codex/hooks.json"), ("user", "~/.codex/hooks.json")),
)


def event(payload: Mapping[str, Any]) -> Event:
    name = text(payload, "hook_event_name")
    common: dict[str, Any] = {
        "agent": AGENT, "cwd": text(payload, "cwd"), "session": text(payload, "session_id"),
        "transcript": text(payload, "transcript_path"), "prompt_id": text(payload, "turn_id"),
    }
    if name in TOOL_EVENTS:
        call = tool_call(AGENT, payload, {}, TOOLS)
        return call if isinstance(call, Event) else Event(TOOL_EVENTS[name], call=call, **common)
    if name == "UserPromptSubmit":
        return Event("prompt", **common)
    if name == "Stop":
        return Event("stop", **common)
    return ignored(AGENT, f"gitspace does not use the {name} event.", payload)
