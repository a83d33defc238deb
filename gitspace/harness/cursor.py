"""Cursor's agent hooks (``.cursor/hooks.json``: ``{"version": 1, "hooks": {event: [{command}]}}``).

Its documentation gives every event ``conversation_id``, ``generation_id``, ``workspace_roots`` and
``hook_event_name``; ``afterFileEdit`` adds ``file_path`` and ``edits`` (``old_string`` /
``new_string`` pairs); ``beforeShellExecution`` / ``afterShellExecution`` add ``command`` and
``cwd`` (after: ``output``, ``duration``); ``beforeSubmitPrompt`` adds ``prompt``; ``stop`` adds
``status``. Cursor gives no tool-use id and no hook before a file edit, so an edit is recorded
with the file's whole change (a person's unrecorded edit of the same file since the last call
lands in it). Used here: event name, conversation id (as the session), generation id (as the
prompt id), the first workspace root (as the cwd), file path and edits, command. Cursor reads
stdout as JSON, so the hook prints ``{}``.
"""

from __future__ import annotations

from .events import Call, Event, ignored, text
from .spec import HookSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

AGENT = "cursor"

SPEC = HookSpec(
    name=AGENT, title="Cursor", style="flat",
    events=(("afterFileEdit", None), ("beforeShellExecution", None), ("afterShellExecution", None),
            ("beforeSubmitPrompt", None), ("stop", None)),
    files=(("project", ".cursor/hooks.json"), ("user", "~/.cursor/hooks.json")),
    stdout="{}",
    no_fork="Cursor's agent keeps its conversations where gitspace cannot read or resume them",
)


def event(payload: Mapping[str, Any]) -> Event:
    name = text(payload, "hook_event_name")
    roots = payload.get("workspace_roots")
    root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
    common: dict[str, Any] = {
        "agent": AGENT, "cwd": root or text(payload, "cwd"),
        "session": text(payload, "conversation_id"), "prompt_id": text(payload, "generation_id"),
    }
    if name == "afterFileEdit":
        path = text(payload, "file_path")
        if path is None:
            return ignored(AGENT, "The afterFileEdit payload names no file_path.", payload)
        edits = payload.get("edits") if isinstance(payload.get("edits"), list) else []
        return Event("after", call=Call("Edit", {"file_path": path, "edits": edits}, (path,)),
                     **common)
    if name in ("beforeShellExecution", "afterShellExecution"):
        command = text(payload, "command")
        if command is None:
            return ignored(AGENT, f"The {name} payload has no command.", payload)
        kind = "before" if name.startswith("before") else "after"
        return Event(kind, call=Call("Shell", {"command": command}, None), **common)
    if name == "beforeSubmitPrompt":
        return Event("prompt", **common)
    if name == "stop":
        return Event("stop", **common)
    return ignored(AGENT, f"gitspace does not use the {name} event.", payload)
