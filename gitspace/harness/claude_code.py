"""Claude Code's hooks, as the real binary sends them (see tests/harness/test_claude_code_wire.py).

Every payload carries ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``; tool
events add ``tool_name``, ``tool_input`` and ``tool_use_id`` (PostToolUse adds ``tool_response``,
PostToolUseFailure ``error``); turn events carry ``prompt_id`` (UserPromptSubmit also ``prompt``).
Used here: the event name, session, cwd, transcript path, prompt id, tool name, tool input and
tool-use id. ``tool_response`` and the prompt text are never stored. Claude Code runs hooks with
``CLAUDE_PROJECT_DIR`` set to the project root, which is where gitspace looks for the workspace.
Its hooks may post to a URL (``http``): in place, they post to the checkout's resident recorder,
``SessionStart`` (a command hook only) starts it and ``SessionEnd`` lets it stop once idle
(harness/resident/).
"""

from __future__ import annotations

from ..storage.records import replace
from .events import Event, ignored, text, tool_call
from .spec import HookSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

AGENT = "claude-code"
# Tools that change files and name them in their input, and the input key that names the file.
PATH_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}
SHELL_TOOLS = ("Bash",)
MATCHER = "|".join([*PATH_TOOLS, *SHELL_TOOLS])
TOOL_EVENTS = {"PreToolUse": "before", "PostToolUse": "after", "PostToolUseFailure": "failed"}

SPEC = HookSpec(
    name=AGENT, title="Claude Code", style="matchers",
    events=(("SessionStart", None), ("PreToolUse", MATCHER), ("PostToolUse", MATCHER),
            ("PostToolUseFailure", MATCHER), ("UserPromptSubmit", None), ("Stop", None),
            ("SessionEnd", None)),
    files=(("project", ".claude/settings.json"), ("local", ".claude/settings.local.json"),
           ("user", "~/.claude/settings.json")),
    project_dir="CLAUDE_PROJECT_DIR",
    forker="fork_claude",
    http=True,
)


def event(payload: Mapping[str, Any]) -> Event:
    name = text(payload, "hook_event_name")
    common: dict[str, Any] = {
        "agent": AGENT, "cwd": text(payload, "cwd"), "session": text(payload, "session_id"),
        "transcript": text(payload, "transcript_path"), "prompt_id": text(payload, "prompt_id"),
    }
    if name in TOOL_EVENTS:
        call = tool_call(AGENT, payload, PATH_TOOLS, SHELL_TOOLS)
        if isinstance(call, Event):
            return call
        kind = TOOL_EVENTS[name]
        if kind == "failed":
            call = replace(call, error=text(payload, "error"))
        return Event(kind, call=call, **common)
    if name == "UserPromptSubmit":
        return Event("prompt", **common)
    if name == "Stop":
        return Event("stop", **common)
    return ignored(AGENT, f"gitspace does not use the {name} event.", payload)
