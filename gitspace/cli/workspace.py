"""Commands on the workspace itself: init, status, tools, call, snapshot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .. import config
from ..errors import BadArguments
from .common import JsonOpt, call_tool, echo, emit_json, here, open_workspace, render, show_result, state


def init(directory: Annotated[Path, typer.Argument()] = Path(".")) -> None:
    """Make DIRECTORY a new workspace (a git repository the agent owns)."""
    import gitspace

    with gitspace.init(here(directory), agent=state.agent,
                       max_file_bytes=config.max_file_bytes()) as ws:
        echo(f"Initialised gitspace workspace in {ws.root} on branch {ws.branch()}.")


def status(as_json: JsonOpt = False) -> None:
    """Branch, tip op, and outside changes not yet snapshotted."""
    from ..core.snapshot import pending_changes

    with open_workspace() as ws:
        changes, skipped = pending_changes(ws)
        data = {"root": str(ws.root), "branch": ws.branch(), "tip": ws.tip(),
                "pending": sorted(changes), "too_large": skipped}
        emit_json(data) if as_json else render().status(data)


def tools(as_json: JsonOpt = False) -> None:
    """List every tool an agent can call, with its example."""
    from ..tools.registry import registry_of
    from ..tools.scripts import catalog

    with open_workspace() as ws:
        registry = registry_of(ws)
        found = registry.all(ws)
        cat = catalog(ws)
        reserved = set(registry.builtins)
        notes = [f"workspace script {n} overrides the built-in script" for n in cat.overridden]
        notes += [f"script {n} is ignored: a built-in tool has that name"
                  for n in cat.scripts if n in reserved]
        notes += [str(e) for e in cat.errors]
        if as_json:
            emit_json({"tools": [{**t.definition(), "mutates": t.mutates, "origin": t.origin,
                                  "example": t.example} for t in found.values()],
                       "notes": notes})
        else:
            render().tools(list(found.values()), notes)


def call(
    tool: str,
    args: Annotated[str, typer.Option("--args", help="Arguments as a JSON object.")] = "{}",
    as_json: JsonOpt = False,
) -> None:
    """Run any tool exactly as an agent would."""
    try:
        parsed = json.loads(args)
    except RecursionError:
        raise BadArguments("--args nests too deeply to read.",
                           hint="Pass a flat JSON object of the tool's arguments.") from None
    except ValueError as e:
        raise BadArguments(f"--args is not valid JSON: {e}.",
                           hint='Quote it for the shell, e.g. --args \'{"path": "notes"}\'.') from None
    if not isinstance(parsed, dict):
        raise BadArguments("--args must be a JSON object of the tool's arguments.",
                           hint='Pass one object, e.g. --args \'{"path": "notes"}\'.')
    call_tool(tool, parsed, as_json)


def snapshot(author: Annotated[str, typer.Option(help="Who made the changes.")] = "human") -> None:
    """Commit all pending outside changes as one op (source: external)."""
    with open_workspace(external_author=author) as ws:
        show_result(ws.snapshot())
