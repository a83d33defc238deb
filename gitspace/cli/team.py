"""Commands for many actors: watch, attach, agents, merge, detach, push, pull."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import config
from ..errors import BadArguments
from .common import (
    JsonOpt,
    echo,
    emit_json,
    here,
    open_workspace,
    person_of,
    render,
    report_line,
    state,
)


def watch(
    directory: Annotated[Optional[Path], typer.Argument(help="The workspace (default: -C, else the current folder).")] = None,  # noqa: UP045,E501
    author: Annotated[Optional[str], typer.Option(help="Who made the edits (default: GITSPACE_AUTHOR, else your git user.name).")] = None,  # noqa: UP045,E501
    debounce: Annotated[float, typer.Option(min=0.01, help="Seconds of quiet that end a burst.")] = 0.3,
    max_wait: Annotated[float, typer.Option(min=0.01, help="Most seconds a busy burst waits.")] = 5.0,
) -> None:
    """Record outside edits as ops, a burst at a time, until Ctrl-C or SIGTERM (which commit first)."""
    import signal
    import threading

    from ..team.attach import route
    from ..team.watch import Watcher, WatchReport

    # Like every other command: --agent NAME watches NAME's worktree, never the user's checkout.
    target = route(here(directory), state.agent)
    announced = threading.Event()  # the first flush runs at once: its line follows "Watching"

    def report(line: WatchReport) -> None:
        announced.wait()
        report_line(line)

    watcher = Watcher(target, author=author or config.default_author(),
                      debounce=debounce, max_wait=max_wait, max_file_bytes=config.max_file_bytes(),
                      on_report=report)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        watcher.start()
        echo(f"Watching {watcher.root} for edits by {person_of(watcher.root, watcher.author)}; "
             "Ctrl-C or SIGTERM stops.")
        announced.set()
        while not stop.wait(1.0):
            pass
    finally:
        announced.set()
        for sig, handler in previous.items():  # a second Ctrl-C while stopping interrupts for real
            signal.signal(sig, handler)
        watcher.stop()  # a failed last commit raises: exit 1 with it, never "committed"
    echo(f"Stopped watching {watcher.root}: pending edits committed, "
         f"{watcher.stats.commits} op(s) recorded in all.")


def attach(
    repo: Annotated[Optional[Path], typer.Argument(help="The repository (default: here).")] = None,  # noqa: UP045,E501
    agent: Annotated[Optional[str], typer.Option(help="The agent's name.")] = None,  # noqa: UP045
    at: Annotated[Optional[str], typer.Option(help="Put the agent's worktree in this new (or empty) folder outside .git, e.g. beside the repository (Claude Code will not edit under .git). Default: inside .git.")] = None,  # noqa: UP045,E501
    as_json: JsonOpt = False,
) -> None:
    """Give an agent its own branch (agent/NAME) and worktree in an existing repository."""
    from ..team.attach import attach as attach_agent

    name = agent or state.agent
    if not name:
        raise BadArguments("Name the agent: gitspace attach [REPO] --agent NAME [--at DIR].")
    # --at is a str, not a Path: click's Path type stats the folder and checks access, and a
    # link swapped in between those two calls would end the run with click's usage error
    # instead of attach's own refusal, which checks the folder once, safely.
    if at == "":
        raise BadArguments("--at needs a folder: gitspace attach --agent NAME --at DIR.")
    done = attach_agent(here(repo), name, None if at is None else Path(at))
    if as_json:
        emit_json({"agent": done.name, "branch": done.branch, "path": str(done.path),
                   "start": done.start, "dirty": done.dirty, "existed": done.existed,
                   "resumed": done.resumed}, "attach")
    else:
        render().attached(done)


def agents(as_json: JsonOpt = False) -> None:
    """List the agents of this repository: branch, worktree, ops, last op."""
    from ..team.attach import agents as list_agents

    rows = list_agents(state.directory)
    if as_json:
        emit_json([{"agent": a.name, "branch": a.branch, "path": a.path and str(a.path),
                    "tip": a.tip, "ops": a.ops, "last_op": a.last and a.last.op_id,
                    "last_tool": a.last and a.last.tool, "last_time": a.last_time}
                   for a in rows], "agents")
    else:
        render().agents(rows)


def merge(
    name: str,
    into: Annotated[Optional[str], typer.Option(help="Branch to merge into (default: the one your checkout is on).")] = None,  # noqa: UP045,E501
    squash: Annotated[bool, typer.Option("--squash", help="One commit on the target (one parent) instead of a merge commit.")] = False,  # noqa: E501
) -> None:
    """Merge agent NAME's branch back with a merge commit (or one --squash commit); gitspace's
    own hook settings never come along, and a conflict changes nothing."""
    from ..team.merge import merge as merge_agent

    render().merged(merge_agent(state.directory, name, into, squash))


def detach(
    name: str,
    force: Annotated[bool, typer.Option(help="Also throw away changes no op recorded.")] = False,
) -> None:
    """Remove agent NAME's worktree; its branch stays."""
    from ..team.attach import detach as detach_agent

    render().detached(detach_agent(state.directory, name, force))


SyncBranches = Annotated[Optional[list[str]], typer.Option("--branch", help="Also this branch (repeatable).")]  # noqa: UP045,E501


def push(remote: Annotated[str, typer.Argument()] = "origin", branch: SyncBranches = None) -> None:
    """Push gitspace branches and checkpoints to REMOTE (never forced)."""
    from ..team import remote as remotes

    with open_workspace() as ws:
        render().synced(remotes.push(ws, remote, tuple(branch or ())), "push")


def pull(remote: Annotated[str, typer.Argument()] = "origin", branch: SyncBranches = None) -> None:
    """Fetch from REMOTE and fast-forward gitspace branches and checkpoints (never forced)."""
    from ..team import remote as remotes

    with open_workspace() as ws:
        render().synced(remotes.pull(ws, remote, tuple(branch or ())), "pull")
