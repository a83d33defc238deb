"""What the command modules share: ``shared`` (which a read needs, without typer) and what only
the commands typer parses use: the ``--json`` option, tool calls and their results, the watcher.

Invariant: command modules import this module and the library, never the app
(``cli/commands.py``) and never each other. Usage errors (how a command was typed: an unknown
option, a bad value, malformed ``--args``) raise ``usage`` and exit 2; everything the library
refuses exits 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from . import shared
from .options import Color, colour_on, state  # noqa: F401  (re-exported)
from .shared import (  # noqa: F401  (re-exported)
    echo,
    emit_json,
    find_entry,
    global_options,
    here,
    in_place,
    open_workspace,
    render,
    take_arguments,
    take_paths,
    usage,
    write_raw,
)

JsonOpt = Annotated[bool, typer.Option(
    "--json", help="Print JSON (docs/json.md); --json=a,b keeps only those fields.")]


def person_of(root: Path, explicit: str | None) -> str:
    """The name a person's edits in ``root`` are recorded under (see ``open_workspace``)."""
    from ..core import person
    from ..storage.gitrepo import GitRepo

    repo = GitRepo.open(root)
    try:
        return person.person_token(repo, explicit)
    finally:
        repo.close()


def progress_shown(enabled: bool = True) -> Any:
    """A context in which the progress the library reports is shown on stderr (a bar on a
    terminal, plain lines elsewhere: ``progressview.shown``)."""
    from .progressview import shown

    return shown(enabled)


def show_result(result: Any, as_json: bool = False) -> None:
    """A tool call's result, as text or JSON; exit 1 when it failed."""
    if as_json:
        from ..storage.ledger import short_id

        emit_json({"ok": result.ok, "text": result.text, "tool": result.tool, "op": result.op,
                   "op_short": short_id(result.op) if result.op else None,
                   "commit": result.commit, "changed": result.changed,
                   "external_op": result.external_op, "notes": result.notes}, "result")
    else:
        shared.show_result(result)
    if not result.ok:
        raise typer.Exit(1)


def call_tool(tool: str, args: dict[str, Any], as_json: bool = False) -> None:
    """Run one tool as an agent would (its progress shown, for a long script), and show its
    result."""
    with open_workspace() as ws:
        with progress_shown():
            result = ws.call(tool, args)
        show_result(result, as_json)


def report_line(report: Any) -> None:
    """A watcher's report, one line (errors to stderr)."""
    echo(report.text, err=report.kind == "error")


def start_watcher(root: Path, quiet: bool) -> Any:
    """A running watcher for ``gitspace run --watch`` (stop it when the run ends)."""
    from .. import config
    from ..team.watch import Watcher

    watcher = Watcher(root, author=config.default_author(),
                      max_file_bytes=config.max_file_bytes(),
                      on_report=None if quiet else report_line)
    watcher.start()
    return watcher
