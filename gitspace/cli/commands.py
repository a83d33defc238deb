"""The typer app: every command, in one list, and the app built from it.

``COMMANDS`` is the one list of every command (each a function in a command module: workspace,
reads, history, agent_run, team, fleet, replay, mcp, ui, harness) and ``GROUPS`` the commands
with subcommands. ``cli/__init__`` runs a read whose command line needs no typer without this
module (``cli/reads.py``); everything else, help and shell completion included, goes through
the app built here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer
from typer import _click as click
from typer.core import TyperGroup

from . import (
    agent_run,
    fleet,
    fork,
    harness,
    history,
    mcp,
    params,
    provenance,
    reads,
    replay,
    shared,
    team,
    ui,
    workspace,
)

# Every command, in the order ``gitspace --help`` lists them.
COMMANDS: list[tuple[str, Callable[..., Any]]] = [
    ("init", workspace.init),
    *reads.READS.items(),  # status, log, show, diff, blame
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
    ("fork", fork.fork),
    ("gc", harness.gc),
    ("provenance", provenance.provenance),
    ("purge", provenance.purge),
    ("hook", harness.hook),
    ("record", harness.record),
]

# Commands with subcommands: `gitspace sessions` lists, `gitspace sessions show ID` shows one.
GROUPS: list[tuple[str, typer.Typer]] = [
    ("sessions", agent_run.sessions_app),
    ("hooks", harness.hooks_app),  # install | uninstall | status
    ("notes", provenance.notes_app),  # fetch | push
]

# How `gitspace --help` groups the commands, in this order. What a harness's hooks run (`hook`,
# `record`) is not for people to type, so it is not listed (it still works, and has -h).
SECTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("Start", ("init", "demo", "status", "tools")),
    ("Read what was recorded", ("log", "show", "diff", "checkpoints", "branches", "sessions",
                                "verify", "replay", "ui")),
    ("Who wrote what (authorship notes)", ("blame", "provenance", "notes", "purge")),
    ("Change the files (each change is an op)", ("call", "checkpoint", "restore", "undo", "redo",
                                                 "rewind", "fork", "branch", "switch",
                                                 "snapshot", "exclude")),
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


def _typed(function: Callable[..., Any]) -> Callable[..., Any]:
    """The command typer registers: a read's declared parameters spelled for typer."""
    return params.for_typer(function) if hasattr(function, "__gitspace_params__") else function


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
    app.callback()(_typed(shared.global_options))
    for name, function in COMMANDS:
        if whole or name == command:
            app.command(name=name, hidden=name in INTERNAL)(_typed(function))
        else:
            app.command(name=name, help=function.__doc__, hidden=name in INTERNAL)(
                _listed_only)
    for name, group in GROUPS:
        if whole or name == command:
            app.add_typer(group, name=name)
        else:
            app.add_typer(typer.Typer(), name=name, help=group.info.help)
    return app


def _listed_only() -> None:
    """Stands in for a command this run does not run (see ``build``); never called."""
    raise AssertionError("a listed-only command ran")


def __getattr__(name: str) -> Any:
    """``app``, the whole app (for tests and tools that drive typer): built when first asked
    for, not on import, since a run builds only its own command's (``build``)."""
    if name == "app":
        globals()["app"] = built = build()
        return built
    raise AttributeError(f"module 'gitspace.cli.commands' has no attribute {name!r}")
