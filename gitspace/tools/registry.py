"""The tool registry: what a tool is, and the one way every tool call runs.

Invariant: each tool carries its own interface (name, description saying what and when, an
example call, an argument schema, whether it mutates), because a model reads nothing else. Args are
validated against the schema before anything runs, after the ownership check of a mutating call.
Read-only tools never commit. Which built-in tools exist is one explicit list, ``builtins.py``;
constraint scripts are found per workspace (``scripts.py``) and reach the registry through the
same door.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core import schema
from ..core.result import Result
from ..core.workspace import Workspace
from ..errors import UnknownTool


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

def builtin(
    name: str,
    description: str,
    example: dict[str, Any],
    args_schema: dict[str, Any],
    *,
    mutates: bool,
    destructive: bool = False,
    wire_type: str | None = None,
) -> Callable[[Callable[..., Result]], Tool]:
    """Make a built-in tool of a function ``fn(ws, args, *, tool_use_id, op_id) -> Result``.

    Nothing is registered here: a tool is offered once it is listed in ``tools/builtins.py``."""

    def make(fn: Callable[..., Result]) -> Tool:
        return Tool(name, description, example, args_schema, mutates, fn,
                    destructive=destructive, wire_type=wire_type)

    return make


Scripts = Callable[[Workspace, set[str]], dict[str, Tool]]


class Registry:
    """The tools one workspace offers: the built-ins it was made with, then the constraint
    scripts ``scripts(ws, reserved)`` finds (a script never shadows a built-in)."""

    def __init__(self, builtins: Mapping[str, Tool], scripts: Scripts | None = None) -> None:
        self.builtins = builtins  # by name; read when used, never copied
        self.scripts = scripts

    def all(self, ws: Workspace) -> dict[str, Tool]:
        """Built-ins plus the workspace's constraint scripts, sorted by name."""
        tools = dict(self.builtins)
        if self.scripts is not None:
            tools.update(self.scripts(ws, set(tools)))
        return dict(sorted(tools.items()))

    def find(self, ws: Workspace, name: str) -> Tool:
        if name in self.builtins:
            return self.builtins[name]
        tools = self.all(ws)
        if name not in tools:
            raise UnknownTool(
                f"There is no tool named {name!r}.",
                hint="Run 'gitspace tools' to list them: " + ", ".join(sorted(tools)) + ".",
            )
        return tools[name]

    def run(self, ws: Workspace, name: str, args: dict[str, Any], *, tool_use_id: str | None,
            op_id: str | None) -> Result:
        """The one way a tool runs: ownership, then the schema, then the tool."""
        tool = self.find(ws, name)
        if tool.mutates and not _views_only(tool, args):
            ws.require_owned()
        schema.validate(tool.args_schema, args, example=tool.example)
        args = schema.apply_defaults(tool.args_schema, args)
        return tool.run(ws, args, tool_use_id=tool_use_id, op_id=op_id)


def registry_of(ws: Workspace) -> Registry:
    """The registry ``ws`` was opened with."""
    if not isinstance(ws.tools, Registry):
        raise TypeError(f"{ws.root} was opened with tools that are not a Registry.")
    return ws.tools


def all_tools(ws: Workspace) -> dict[str, Tool]:
    """Every tool ``ws`` offers (built-ins and constraint scripts), sorted by name."""
    return registry_of(ws).all(ws)


def _views_only(tool: Tool, args: dict[str, Any]) -> bool:
    """A call of a mutating tool that only reads (the memory tool's ``view`` command)."""
    return tool.name == "memory" and args.get("command") == "view"
