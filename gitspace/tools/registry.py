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
from ..core.identity import Identity
from ..core.result import Result
from ..core.workspace import Workspace
from ..errors import UnknownTool
from .recovery import Recover, from_ledger
from .script_header import Script


@dataclass(frozen=True)
class Tool:
    """A tool and everything that depends on which tool runs: callers ask it, never its name."""

    name: str
    description: str
    example: dict[str, Any]
    args_schema: dict[str, Any]
    mutates: bool  # may change files or refs; a read-only tool never commits
    run: Callable[..., Result]
    origin: str = "builtin"  # builtin, or where a constraint script came from
    destructive: bool = False  # may remove files (undo brings them back)
    # A tool Anthropic defines itself (e.g. "memory_20250818"): models get {"type", "name"}
    # instead of a schema, and gitspace only supplies the backend.
    wire_type: str | None = None
    idempotent: bool = False  # repeating a call changes nothing more (every read-only tool is)
    moves_refs: bool = False  # makes or moves a tag, a branch or HEAD, and records no op commit
    # A call of a mutating tool that only reads (the memory tool's view): no ownership needed.
    reads_only: Callable[[dict[str, Any]], bool] | None = None
    recover: Recover = from_ledger  # how a resumed agent finds a call that already ran
    # The argument naming the checkpoint whose files the op brings back (restore: "name").
    restores_checkpoint: str | None = None
    script: Script | None = None  # the constraint script it runs (None: gitspace's own code)

    def __post_init__(self) -> None:
        if not self.mutates:
            object.__setattr__(self, "idempotent", True)

    def writes(self, args: dict[str, Any]) -> bool:
        """Can this call change the workspace?"""
        return self.mutates and not (self.reads_only is not None and self.reads_only(args))

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
    **properties: Any,
) -> Callable[[Callable[..., Result]], Tool]:
    """Make a built-in tool of a function ``fn(ws, args, who) -> Result`` (``who``: the call's
    ``core.identity.Identity``, whose ``op(args)`` is the op the tool records);
    ``properties`` are the other fields of ``Tool`` (destructive, idempotent, moves_refs...).

    Nothing is registered here: a tool is offered once it is listed in ``tools/builtins.py``."""

    def make(fn: Callable[..., Result]) -> Tool:
        return Tool(name, description, example, args_schema, mutates, fn, **properties)

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

    def get(self, ws: Workspace, name: str) -> Tool | None:
        """The tool called ``name``, or None. A built-in is found without discovering the
        scripts (a script never shadows one), so a built-in call costs no look at the folders."""
        return self.builtins[name] if name in self.builtins else self.all(ws).get(name)

    def find(self, ws: Workspace, name: str) -> Tool:
        tool = self.get(ws, name)
        if tool is None:
            import difflib

            known = list(self.all(ws))
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
            mean = (f"Did you mean {' or '.join(repr(c) for c in close)}? " if close else "")
            raise UnknownTool(
                f"There is no tool named {name!r}.",
                hint=mean + "Run 'gitspace tools' to list them: " + ", ".join(known) + ".",
            )
        return tool

    def run(self, ws: Workspace, who: Identity, args: dict[str, Any]) -> Result:
        """The one way a tool runs: ownership, then the schema, then the tool, as ``who``."""
        tool = self.find(ws, who.tool)
        if tool.writes(args):
            ws.require_owned()
        schema.validate(tool.args_schema, args, example=tool.example)
        args = schema.apply_defaults(tool.args_schema, args)
        return tool.run(ws, args, who)


def registry_of(ws: Workspace) -> Registry:
    """The registry ``ws`` was opened with."""
    if not isinstance(ws.tools, Registry):
        raise TypeError(f"{ws.root} was opened with tools that are not a Registry.")
    return ws.tools


def tool_named(ws: Workspace, name: str) -> Tool | None:
    """The tool ``ws`` offers under ``name`` (a built-in or a constraint script), or None."""
    return registry_of(ws).get(ws, name)


def all_tools(ws: Workspace) -> dict[str, Tool]:
    """Every tool ``ws`` offers (built-ins and constraint scripts), sorted by name."""
    return registry_of(ws).all(ws)
