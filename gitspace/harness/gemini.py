"""Gemini CLI's hooks (``.gemini/settings.json``, the same layout as Claude Code's settings).

Its hooks reference documents, for every event, ``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name`` and ``timestamp``; BeforeTool adds ``tool_name`` and ``tool_input``; AfterTool
adds ``tool_response`` (``llmContent``, ``returnDisplay``, and ``error`` when the tool failed);
BeforeAgent adds ``prompt``; AfterAgent ends the turn. Gemini CLI gives no tool-use id, so its
ops carry none. Tools recorded: ``write_file`` and ``replace`` (the file is ``file_path``) and
``run_shell_command`` (its effect is whatever changed while it ran). Used here: event name,
session, cwd, transcript path, tool name, tool input, and whether ``tool_response.error`` is set.
Hooks must print only JSON on stdout, so the hook prints ``{}``.
"""

from __future__ import annotations

from ..storage.records import replace
from .events import Event, ignored, mapping, text, tool_call
from .spec import HookSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

AGENT = "gemini-cli"
PATH_TOOLS = {"write_file": "file_path", "replace": "file_path"}
SHELL_TOOLS = ("run_shell_command",)
MATCHER = "^(" + "|".join([*PATH_TOOLS, *SHELL_TOOLS]) + ")$"

SPEC = HookSpec(
    name=AGENT, title="Gemini CLI", style="matchers",
    events=(("BeforeTool", MATCHER), ("AfterTool", MATCHER), ("BeforeAgent", None),
            ("AfterAgent", None)),
    files=(("project", ".gemini/settings.json"), ("user", "~/.gemini/settings.json")),
    stdout="{}",
    project_dir="GEMINI_PROJECT_DIR",
    timeout_unit=1000,  # Gemini CLI reads a hook's timeout in milliseconds
)


def event(payload: Mapping[str, Any]) -> Event:
    name = text(payload, "hook_event_name")
    common: dict[str, Any] = {
        "agent": AGENT, "cwd": text(payload, "cwd"), "session": text(payload, "session_id"),
        "transcript": text(payload, "transcript_path"),
    }
    if name in ("BeforeTool", "AfterTool"):
        call = tool_call(AGENT, payload, PATH_TOOLS, SHELL_TOOLS)
        if isinstance(call, Event):
            return call
        kind = "before"
        if name == "AfterTool":
            failure = (mapping(payload, "tool_response") or {}).get("error")
            call = replace(call, error=str(failure) if failure else None)
            kind = "failed" if failure else "after"
        return Event(kind, call=call, **common)
    if name == "BeforeAgent":
        return Event("prompt", **common)
    if name == "AfterAgent":
        return Event("stop", **common)
    return ignored(AGENT, f"gitspace does not use the {name} event.", payload)
