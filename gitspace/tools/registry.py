"""The tool registry: every tool an agent can call, built-in or constraint script, in one place.

Invariant: each tool carries its own interface (name, description saying what and when, an
example call, an argument schema, whether it mutates), because a model reads nothing else. Args are
validated against the schema before anything runs. Read-only tools never commit; file tools run as
one transaction; history tools (checkpoint, restore, undo, redo, branch, switch) go through the
modules that own those concepts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core import schema
from ..errors import UnknownTool

if TYPE_CHECKING:
    from ..core.workspace import Result, Workspace


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    example: dict[str, Any]
    args_schema: dict[str, Any]
    mutates: bool
    run: Callable[..., Result]
    origin: str = "builtin"
    destructive: bool = False
    # A tool Anthropic defines itself (e.g. "memory_20250818"): models get {"type", "name"}
    # instead of a schema, and gitspace only supplies the backend.
    wire_type: str | None = None

    def definition(self) -> dict[str, Any]:
        """A neutral definition: what the model-facing front ends translate."""
        return {
            "name": self.name,
            "description": f"{self.description}\nExample: {json.dumps(self.example)}",
            "input_schema": self.args_schema,
        }


def obj(required: list[str] | None = None, **props: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = required
    return out


def string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def integer(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "integer", "description": description, **extra}


PATH = string("Path relative to the workspace root, e.g. 'notes/todo.md'.")

_BUILTINS: dict[str, Tool] = {}


def builtin(
    name: str,
    description: str,
    example: dict[str, Any],
    args_schema: dict[str, Any],
    *,
    mutates: bool,
    destructive: bool = False,
    wire_type: str | None = None,
) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
    """Register a built-in tool function ``fn(ws, args, *, tool_use_id, op_id) -> Result``."""

    def register(fn: Callable[..., Result]) -> Callable[..., Result]:
        _BUILTINS[name] = Tool(name, description, example, args_schema, mutates, fn,
                               destructive=destructive, wire_type=wire_type)
        return fn

    return register


def builtin_tools() -> dict[str, Tool]:
    from . import files, memory, plan, refs  # noqa: F401  (registration side effect)  # noqa: F401

    return dict(_BUILTINS)


def all_tools(ws: Workspace) -> dict[str, Tool]:
    """Built-ins plus the workspace's constraint scripts, sorted by name."""
    from .scripts import constraint_tools

    tools = builtin_tools()
    tools.update(constraint_tools(ws, reserved=set(tools)))
    return dict(sorted(tools.items()))


def find_tool(ws: Workspace, name: str) -> Tool:
    tools = builtin_tools()
    if name in tools:
        return tools[name]
    tools = all_tools(ws)
    if name not in tools:
        raise UnknownTool(
            f"There is no tool named {name!r}.",
            hint="Run 'gitspace tools' to list them: " + ", ".join(sorted(tools)) + ".",
        )
    return tools[name]


def run_tool(
    ws: Workspace, name: str, args: dict[str, Any], *, tool_use_id: str | None, op_id: str | None
) -> Result:
    tool = find_tool(ws, name)
    if tool.mutates and not _views_only(tool, args):
        ws.require_owned()
    schema.validate(tool.args_schema, args, example=tool.example)
    args = schema.apply_defaults(tool.args_schema, args)
    return tool.run(ws, args, tool_use_id=tool_use_id, op_id=op_id)


def _views_only(tool: Tool, args: dict[str, Any]) -> bool:
    """A call of a mutating tool that only reads (the memory tool's ``view`` command)."""
    return tool.name == "memory" and args.get("command") == "view"
