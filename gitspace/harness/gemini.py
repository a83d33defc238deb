"""Gemini CLI's hooks (``.gemini/settings.json``, the same layout as Claude Code's settings), as
the real binary sends them (``tests/harness/test_gemini_wire.py``, Gemini CLI 0.61).

Every payload carries ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` and
``timestamp``; BeforeTool adds ``tool_name`` and ``tool_input``; AfterTool adds
``tool_response`` (``llmContent``, ``returnDisplay``, and ``error`` when the tool failed);
BeforeAgent adds ``prompt``; AfterAgent ends the turn. Tools recorded: ``write_file`` and
``replace`` (the file is ``file_path``) and ``run_shell_command`` (its effect is whatever changed
while it ran). Used here: event name, session, cwd, transcript path, tool name, tool input, and
whether the call failed.

What Gemini CLI does not say, and how it is told:
- a failed call's ``error`` is an object ``{message, type}``: its message is what is recorded;
- a shell command that exited non-zero carries no ``error`` at all, only ``Exit Code: N`` in its
  ``llmContent`` (and ``Signal: N`` when a signal ended it): that makes it ``failed`` too;
- no payload carries the call's id (``<tool>__<id>``): Gemini CLI writes the call, with its id,
  into the session transcript only after the AfterTool hooks have returned. So its op is held
  (``SPEC.late_ids``) and written at the session's next event, with the id ``late_id`` finds in
  the transcript then (docs/harnesses.md).

Hook timeouts are read in milliseconds (``SPEC.timeout_unit``). Hooks must print only JSON on
stdout, so the hook prints ``{}``.
"""

from __future__ import annotations

import re

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
_ENDED = re.compile(r"^(Exit Code|Signal): (-?\d+)\s*$", re.MULTILINE)

SPEC = HookSpec(
    name=AGENT, title="Gemini CLI", style="matchers",
    events=(("BeforeTool", MATCHER), ("AfterTool", MATCHER), ("BeforeAgent", None),
            ("AfterAgent", None)),
    files=(("project", ".gemini/settings.json"), ("user", "~/.gemini/settings.json")),
    stdout="{}",
    project_dir="GEMINI_PROJECT_DIR",
    timeout_unit=1000,  # Gemini CLI reads a hook's timeout in milliseconds
    late_ids=True,
    no_fork="gitspace does not write Gemini CLI's session files yet: how its resume reads a cut "
            "one is not proven against the binary",
)


def late_id(transcript: str | None, session: str | None, tool: str, args: dict[str, Any],
            taken: set[str]) -> str | None:
    """The call's id, once Gemini CLI wrote it into the session's transcript (``tail.py``)."""
    from .tail import gemini_call_id

    return gemini_call_id(transcript, session, tool, args, taken)


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
            failure = _failure(mapping(payload, "tool_response") or {}, call.paths is None)
            call = replace(call, error=failure)
            kind = "failed" if failure else "after"
        return Event(kind, call=call, **common)
    if name == "BeforeAgent":
        return Event("prompt", **common)
    if name == "AfterAgent":
        return Event("stop", **common)
    return ignored(AGENT, f"gitspace does not use the {name} event.", payload)


def _failure(response: Mapping[str, Any], shell: bool) -> str | None:
    """Why the call failed, as Gemini CLI says it; None when it did not."""
    error = response.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        return message if isinstance(message, str) and message else "no reason given"
    if error:
        return str(error)
    content = response.get("llmContent")
    if not shell or not isinstance(content, str):
        return None
    ended = [m for m in _ENDED.finditer(content) if m.group(2) != "0"]
    return f"{ended[-1].group(1).lower()} {ended[-1].group(2)}" if ended else None
