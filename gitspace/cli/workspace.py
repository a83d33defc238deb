"""Commands on the workspace itself: init, status, tools, call, snapshot."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import config
from ..errors import BadArguments
from . import lines
from .common import (
    JsonOpt,
    call_tool,
    echo,
    emit_json,
    here,
    open_workspace,
    render,
    show_result,
    state,
    usage,
)


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
        branch, tip = ws.repo.head_branch(), ws.repo.read_ref("HEAD")
        changes, skipped = pending_changes(ws) if tip else ({}, [])
        data = {"root": str(ws.root), "branch": branch, "detached": branch is None, "tip": tip,
                "pending": sorted(changes), "too_large": skipped}
        if as_json:
            emit_json(data, "status")
        else:
            echo("\n".join(lines.status(data)))


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
                       "notes": notes}, "tools")
        else:
            render().tools(list(found.values()), notes)


def call(
    tool: str,
    args: Annotated[str, typer.Option(
        "--args", help="Arguments as a JSON object; @FILE reads them from FILE, - from stdin.")
    ] = "{}",
    as_json: JsonOpt = False,
) -> None:
    """Run any tool exactly as an agent would."""
    call_tool(tool, parse_args(args), as_json)


def parse_args(text: str) -> dict[str, Any]:
    """``--args``: JSON inline, ``@FILE`` or ``-`` (stdin). Malformed input is a usage error."""
    source = "--args"
    raw = text
    if text == "-":
        text, source = sys.stdin.read(), "--args - (stdin)"
    elif text.startswith("@"):
        path = here(Path(text[1:]))
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            usage(f"--args {raw}: cannot read {path}: {getattr(e, 'strerror', None) or e}.")
        source = f"--args {raw}"
    try:
        parsed = json.loads(text)
    except RecursionError:  # what is in it, not how it was typed: refused as every door refuses it
        raise BadArguments(f"{source} nests too deeply to read.",
                           hint="Pass a flat JSON object of the tool's arguments.") from None
    except ValueError as e:
        usage(f"{source} is not valid JSON: {e}. Quote it for the shell, e.g. "
              '--args \'{"path": "notes"}\', or put it in a file and pass --args @FILE.')
    if not isinstance(parsed, dict):
        usage(f'{source} must be a JSON object, like {{"path": "notes"}}.')
    return parsed


def snapshot(author: Annotated[str, typer.Option(help="Who made the changes.")] = "human") -> None:
    """Commit all pending outside changes as one op (source: external)."""
    with open_workspace(external_author=author) as ws:
        show_result(ws.snapshot())
