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
from typer import _click as click
from typer.core import TyperGroup

from .. import config, extras
from ..errors import GitspaceError, from_os_error
from . import agent_run, common, fleet, harness, history, jsonout, mcp, replay, team, ui, workspace

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
    ("exclude", workspace.exclude),
    ("verify", history.verify),
    ("demo", agent_run.demo),
    ("run", agent_run.run),
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
    ("gc", harness.gc),
    ("hook", harness.hook),
    ("record", harness.record),
]

# Commands with subcommands: `gitspace sessions` lists, `gitspace sessions show ID` shows one.
GROUPS: list[tuple[str, typer.Typer]] = [
    ("sessions", agent_run.sessions_app),
    ("hooks", harness.hooks_app),  # install | uninstall | status
]

# How `gitspace --help` groups the commands, in this order. What a harness's hooks run (`hook`,
# `record`) is not for people to type, so it is not listed (it still works, and has -h).
SECTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("Start", ("init", "demo", "status", "tools")),
    ("Read what was recorded", ("log", "show", "diff", "checkpoints", "branches", "sessions",
                                "verify", "replay", "ui")),
    ("Change the files (each change is an op)", ("call", "checkpoint", "restore", "undo", "redo",
                                                 "rewind", "branch", "switch", "snapshot",
                                                 "exclude")),
    ("Run and record agents", ("run", "hooks", "mcp", "watch")),
    ("Several agents, other clones", ("attach", "agents", "merge", "detach", "push", "pull",
                                      "sync")),
    ("Housekeeping", ("gc",)),
]
INTERNAL = ("hook", "record")


class _Sections(TyperGroup):
    """``--help`` lists the commands under the headings of ``SECTIONS``."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        shown = {name: self.get_command(ctx, name) for name in self.list_commands(ctx)}
        width = max((len(name) for name in shown), default=0)
        for title, names in SECTIONS:
            rows = [(name, cmd.get_short_help_str(formatter.width - 6 - width))
                    for name in names if (cmd := shown.get(name)) is not None and not cmd.hidden]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

def build(command: str | None = None, *, whole: bool = True) -> typer.Typer:
    """The app. ``whole``: every command as it is. Otherwise only ``command`` (when it is one)
    is real, and the others are listed by name and help alone: typer reads every parameter of
    every command it registers on each run, which for 40 commands costs about 100 ms before
    anything happens; a run needs one command's (``benchmarks/cli.py``)."""
    app = typer.Typer(
        cls=_Sections,
        help="A workspace for AI agents that is an ordinary git repository.",
        no_args_is_help=True,
        # typer's --install-completion / --show-completion: shell completion, installed on request.
        add_completion=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        # Plain help and error text, as git prints them: greppable, no boxes, no <bool> metavars,
        # and no rich/markdown import before the first line (--help answers in tens of ms).
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        pretty_exceptions_show_locals=False,
    )
    app.callback()(common.global_options)
    for name, function in COMMANDS:
        if whole or name == command:
            app.command(name=name, hidden=name in INTERNAL)(function)
        else:
            app.command(name=name, help=function.__doc__, hidden=name in INTERNAL)(_listed_only)
    for name, group in GROUPS:
        if whole or name == command:
            app.add_typer(group, name=name)
        else:
            app.add_typer(typer.Typer(), name=name, help=group.info.help)
    return app


def _listed_only() -> None:
    """Stands in for a command this run does not run (see ``build``); never called."""
    raise AssertionError("a listed-only command ran")


app = build()


def main() -> None:
    try:
        args = common.take_arguments(sys.argv[1:])
    except jsonout.UnknownField as e:
        common.render().usage_error(str(e))
        sys.exit(2)
    try:
        build(common.state.command, whole=config.completing())(args=args, prog_name="gitspace")
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
    except ModuleNotFoundError as e:
        missing = extras.for_missing(e)
        if missing is None:
            common.render().bug(e)
            sys.exit(3)
        common.render().error(missing)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 — the one place bugs are reported
        common.render().bug(e)
        sys.exit(3)
