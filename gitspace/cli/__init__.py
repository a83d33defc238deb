"""The command line: parse, call the library, render. No logic lives here.

This module is the front door: it builds the app from ``COMMANDS``, the one list of every command
(each a function in a command module: workspace, history, agent_run, team, fleet, replay, mcp,
ui, harness), and holds the single error handler (``main``): expected errors (GitspaceError) print
a sentence and a hint and exit 1; usage errors exit 2 (typer); anything else is a bug and exits
3; Ctrl-C exits 130. Command modules share ``common`` and never import this module.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import typer

from ..errors import GitspaceError, from_os_error
from . import agent_run, common, fleet, harness, history, mcp, replay, team, ui, workspace

# Every command, in the order ``gitspace --help`` lists them.
COMMANDS: list[tuple[str, Callable[..., Any]]] = [
    ("init", workspace.init),
    ("status", workspace.status),
    ("log", history.log),
    ("show", history.show),
    ("diff", history.diff),
    ("checkpoints", history.checkpoints),
    ("branches", history.branches),
    ("tools", workspace.tools),
    ("call", workspace.call),
    ("checkpoint", history.checkpoint),
    ("restore", history.restore),
    ("undo", history.undo),
    ("redo", history.redo),
    ("branch", history.branch),
    ("switch", history.switch),
    ("snapshot", workspace.snapshot),
    ("verify", history.verify),
    ("demo", agent_run.demo),
    ("run", agent_run.run),
    ("sessions", agent_run.sessions),
    ("mcp", mcp.mcp),
    ("ui", ui.ui),
    ("watch", team.watch),
    ("attach", team.attach),
    ("agents", team.agents),
    ("merge", team.merge),
    ("detach", team.detach),
    ("push", team.push),
    ("pull", team.pull),
    ("sync", fleet.sync),
    ("replay", replay.replay),
    ("rewind", harness.rewind),
    ("hook", harness.hook),
    ("record", harness.record),
]

app = typer.Typer(
    help="A workspace for AI agents that is an ordinary git repository.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
)
app.callback()(common.global_options)
for _name, _command in COMMANDS:
    app.command(name=_name)(_command)
app.add_typer(harness.hooks_app, name="hooks")  # install | uninstall | status


def main() -> None:
    try:
        app()
    except GitspaceError as e:
        common.render().error(e)
        sys.exit(1)
    except OSError as e:  # a full disk, a read-only file: the machine's, not a bug
        expected = from_os_error(e)
        if expected is None:
            common.render().bug(e)
            sys.exit(3)
        common.render().error(expected)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 — the one place bugs are reported
        common.render().bug(e)
        sys.exit(3)
