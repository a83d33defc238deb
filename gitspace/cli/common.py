"""What every command module shares: the global options, opening the workspace, and output.

Invariant: command modules import this module and the library, never the app (``cli/__init__``)
and never each other. Output goes through ``render`` (rich, imported on first use so plain
commands start fast) or the plain emitters below; nothing else in the CLI writes to the terminal.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Optional

import typer

from .. import config


@dataclass
class Globals:
    """The options given before the command: ``-C DIR`` and ``--agent NAME``."""

    directory: Path = Path(".")
    agent: str | None = None


state = Globals()

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def global_options(
    directory: Annotated[Path, typer.Option("-C", help="Run as if started in this folder.")] = Path("."),
    agent: Annotated[Optional[str], typer.Option(help="Agent name recorded on ops.")] = None,  # noqa: UP045
) -> None:
    """The app's callback: remember the global options for the command that follows."""
    state.directory = directory
    state.agent = agent or config.default_agent()


def here(path: Path | None = None) -> Path:
    """``path`` taken relative to ``-C`` (the ``-C`` folder itself when None)."""
    if path is None:
        return Path(state.directory)
    return path if path.is_absolute() else Path(state.directory) / path


def open_workspace(**extra: Any) -> Any:
    """The workspace the command works on, as ``-C`` and ``--agent`` say."""
    import gitspace

    from ..team.attach import route

    # --agent NAME works in NAME's attached worktree, and is refused where NAME is not attached
    # (route). Ops are refused in a checkout gitspace does not own (owner.py); reads work anywhere.
    return gitspace.open(route(state.directory, state.agent), agent=state.agent,
                         max_file_bytes=config.max_file_bytes(), **extra)


def render() -> ModuleType:
    from . import render as module

    return module


def echo(text: str, *, err: bool = False) -> None:
    typer.echo(text, err=err)


def emit_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def write_raw(data: bytes) -> None:
    """Bytes git produced (a diff), passed through as text."""
    sys.stdout.write(data.decode(errors="replace"))


def show_result(result: Any, as_json: bool = False) -> None:
    """A tool call's result, as text or JSON; exit 1 when it failed."""
    if as_json:
        emit_json({"ok": result.ok, "text": result.text, "tool": result.tool, "op": result.op,
                   "commit": result.commit, "changed": result.changed,
                   "external_op": result.external_op})
    else:
        render().result(result)
    if not result.ok:
        raise typer.Exit(1)


def call_tool(tool: str, args: dict[str, Any], as_json: bool = False) -> None:
    """Run one tool as an agent would, and show its result."""
    with open_workspace() as ws:
        show_result(ws.call(tool, args), as_json)


def report_line(report: Any) -> None:
    """A watcher's report, one line (errors to stderr)."""
    echo(report.text, err=report.kind == "error")


def start_watcher(root: Path, quiet: bool) -> Any:
    """A running watcher for ``gitspace run --watch`` (stop it when the run ends)."""
    from ..team.watch import Watcher

    watcher = Watcher(root, author=config.default_author() or "unknown",
                      max_file_bytes=config.max_file_bytes(),
                      on_report=None if quiet else report_line)
    watcher.start()
    return watcher
