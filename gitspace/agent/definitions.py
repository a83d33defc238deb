"""The model-facing tool list and system prompt, built from the one tool registry.

Invariant: for the same tools the list is byte-identical from call to call (the loop builds it once
per run), sorted by name with keys sorted at every level, and only the last definition carries
``cache_control``, so Anthropic's prompt cache can reuse the whole tool prefix. Tools Anthropic
defines itself (``wire_type``, e.g. the memory tool) are sent as ``{"type", "name"}`` only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..tools.registry import Tool

CACHE = {"type": "ephemeral"}

SYSTEM = """\
You work inside a gitspace workspace: a folder that is a git repository. Every tool call that \
changes files becomes one git commit recording the tool, its arguments and you as the author, so \
nothing you do is lost and everything can be undone.

- Files can be large. Never guess at sizes: use the constraint tools a file's folder suggests \
(for a worklog, peek first, then range one window at a time) instead of viewing big files whole.
- Checkpoint before you try something that may not work; restore brings the files back and \
keeps the abandoned path in the log. undo reverts your last op.
- Keep a plan with plan_add / plan_done and read it with plan_show after a restart or when the \
conversation was compacted: the plan is a file (plan.md), so it survives both.
- Long-term memory is the memory tool (/memories): look there first, and record what a future \
session should know.
- When the task is done, answer briefly in plain text without calling a tool."""


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def definition(tool: Tool) -> dict[str, Any]:
    if tool.wire_type:
        return {"name": tool.name, "type": tool.wire_type}
    return _sorted(tool.definition())


def tool_definitions(tools: Mapping[str, Tool], control: Sequence[dict[str, Any]] = (), *,
                     cache: bool = True) -> list[dict[str, Any]]:
    """The definitions of ``tools`` (e.g. ``all_tools(ws)``) and of the loop's own ``control``
    tools (``return``, ``delegate``: already in the definition shape), sorted by name."""
    defs = sorted([*(definition(tool) for tool in tools.values()), *map(_sorted, control)],
                  key=lambda d: d["name"])
    if cache and defs:
        defs[-1] = {**defs[-1], "cache_control": dict(CACHE)}
    return defs


RETURNS = """\
This run must end with a value: when you have it, call the return tool with it instead of \
answering in text. That ends the run and hands the value to whoever started you."""


def system_blocks(extra: str = "", *, returns: bool = False, cache: bool = True
                  ) -> list[dict[str, Any]]:
    text = SYSTEM + (f"\n\n{RETURNS}" if returns else "") + (f"\n\n{extra}" if extra else "")
    block: dict[str, Any] = {"type": "text", "text": text}
    if cache:
        block["cache_control"] = dict(CACHE)
    return [block]
