"""CLI commands for many actors: watch, attach/agents/merge/detach, push/pull, replay."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .. import config
from ..errors import BadArguments
from . import JsonOpt, _emit_json, _open, _render, _state, app


def _report_line(report: Any) -> None:
    typer.echo(report.text, err=report.kind == "error")


def start_watcher(root: Path, quiet: bool) -> Any:
    """A running watcher for ``gitspace run --watch`` (stop it when the run ends)."""
    from ..team.watch import Watcher

    watcher = Watcher(root, author=config.default_author() or "unknown",
                      max_file_bytes=config.max_file_bytes(),
                      on_report=None if quiet else _report_line)
    watcher.start()
    return watcher


@app.command()
def watch(
    directory: Annotated[Optional[Path], typer.Argument(help="The workspace (default: -C, else the current folder).")] = None,  # noqa: UP045,E501
    author: Annotated[Optional[str], typer.Option(help="Who made the edits (default: GITSPACE_AUTHOR, else unknown).")] = None,  # noqa: UP045,E501
    debounce: Annotated[float, typer.Option(min=0.01, help="Seconds of quiet that end a burst.")] = 0.3,
    max_wait: Annotated[float, typer.Option(min=0.01, help="Most seconds a busy burst waits.")] = 5.0,
) -> None:
    """Record outside edits as ops, a burst at a time, until Ctrl-C or SIGTERM (which commit first)."""
    import signal
    import threading

    from ..team.attach import route
    from ..team.watch import Watcher

    # Like every other command: --agent NAME watches NAME's worktree, never the user's checkout.
    target = route(Path(_state["dir"]) / directory if directory else Path(_state["dir"]),
                   _state["agent"])
    watcher = Watcher(target, author=author or config.default_author() or "unknown",
                      debounce=debounce, max_wait=max_wait, max_file_bytes=config.max_file_bytes(),
                      on_report=_report_line)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        watcher.start()
        typer.echo(f"Watching {watcher.root} for edits by {watcher.author}; Ctrl-C or SIGTERM stops.")
        while not stop.wait(1.0):
            pass
    finally:
        for sig, handler in previous.items():  # a second Ctrl-C while stopping interrupts for real
            signal.signal(sig, handler)
        watcher.stop()  # a failed last commit raises: exit 1 with it, never "committed"
    typer.echo(f"Stopped watching {watcher.root}: pending edits committed, "
               f"{watcher.stats.commits} op(s) recorded in all.")


@app.command()
def attach(
    repo: Annotated[Optional[Path], typer.Argument(help="The repository (default: here).")] = None,  # noqa: UP045,E501
    agent: Annotated[Optional[str], typer.Option(help="The agent's name.")] = None,  # noqa: UP045
    as_json: JsonOpt = False,
) -> None:
    """Give an agent its own branch (agent/NAME) and worktree in an existing repository."""
    from ..team.attach import attach as attach_agent

    name = agent or _state["agent"]
    if not name:
        raise BadArguments("Name the agent: gitspace attach [REPO] --agent NAME.")
    target = Path(_state["dir"]) if repo is None else (
        repo if repo.is_absolute() else Path(_state["dir"]) / repo)
    done = attach_agent(target, name)
    if as_json:
        _emit_json({"agent": done.name, "branch": done.branch, "path": str(done.path),
                    "start": done.start, "dirty": done.dirty, "existed": done.existed,
                    "resumed": done.resumed})
    else:
        _render().attached(done)


@app.command(name="agents")
def agents_cmd(as_json: JsonOpt = False) -> None:
    """List the agents of this repository: branch, worktree, ops, last op."""
    from ..team.attach import agents as list_agents

    rows = list_agents(_state["dir"])
    if as_json:
        _emit_json([{"agent": a.name, "branch": a.branch, "path": a.path and str(a.path),
                     "tip": a.tip, "ops": a.ops, "last_op": a.last and a.last.op_id,
                     "last_tool": a.last and a.last.tool, "last_time": a.last_time}
                    for a in rows])
    else:
        _render().agents(rows)


@app.command(name="merge")
def merge_cmd(
    name: str,
    into: Annotated[Optional[str], typer.Option(help="Branch to merge into (default: the one your checkout is on).")] = None,  # noqa: UP045,E501
) -> None:
    """Merge agent NAME's branch back with a merge commit; a conflict changes nothing."""
    from ..team.merge import merge

    _render().merged(merge(_state["dir"], name, into))


@app.command()
def detach(
    name: str,
    force: Annotated[bool, typer.Option(help="Also throw away changes no op recorded.")] = False,
) -> None:
    """Remove agent NAME's worktree; its branch stays."""
    from ..team.attach import detach as detach_agent

    _render().detached(detach_agent(_state["dir"], name, force))


SyncBranches = Annotated[Optional[list[str]], typer.Option("--branch", help="Also this branch (repeatable).")]  # noqa: UP045,E501


@app.command()
def push(remote: Annotated[str, typer.Argument()] = "origin", branch: SyncBranches = None) -> None:
    """Push gitspace branches and checkpoints to REMOTE (never forced)."""
    from ..team import remote as remotes

    with _open() as ws:
        _render().synced(remotes.push(ws, remote, tuple(branch or ())), "push")


@app.command()
def pull(remote: Annotated[str, typer.Argument()] = "origin", branch: SyncBranches = None) -> None:
    """Fetch from REMOTE and fast-forward gitspace branches and checkpoints (never forced)."""
    from ..team import remote as remotes

    with _open() as ws:
        _render().synced(remotes.pull(ws, remote, tuple(branch or ())), "pull")


@app.command()
def replay(
    branch: Annotated[Optional[str], typer.Argument(help="Branch or revision (default: the current branch).")] = None,  # noqa: UP045,E501
    start: Annotated[Optional[str], typer.Option("--from", help="Replay only the ops this revision does not contain (those after it, when it is on the branch).")] = None,  # noqa: UP045,E501
    onto: Annotated[Optional[str], typer.Option("--onto", help="Re-run the ops on this revision instead, into a new branch.")] = None,  # noqa: UP045,E501
    new_branch: Annotated[Optional[str], typer.Option("--branch", help="With --onto: the branch to create.")] = None,  # noqa: UP045,E501
    no_scripts: Annotated[bool, typer.Option("--no-scripts", help="Do not run the workspace's constraint scripts; count their ops as not verified.")] = False,  # noqa: E501
    as_json: JsonOpt = False,
) -> None:
    """Re-run a branch's ops in a scratch copy; exit 1 at the first that does not rebuild its commit.

    Replay runs the constraint scripts recorded in the branch with your privileges: replay only
    branches you would run code from, or pass --no-scripts.
    """
    from ..replay.engine import BadRange
    from ..replay.engine import replay as run_replay
    from ..replay.onto import replay_onto
    from ..replay.scratch import BadNewBranch

    with _open() as ws:
        def rev(name: str, hint: str) -> str:
            sha = ws.repo.resolve(name)
            if sha is None:
                raise typer.BadParameter(f"{name!r} is not a branch or revision here.", param_hint=hint)
            return sha

        tip = rev(branch or ws.repo.head_branch() or "HEAD", "BRANCH")
        base = rev(start, "--from") if start else None
        target = rev(onto, "--onto") if onto else None
        if (target is None) != (new_branch is None):
            raise typer.BadParameter("--onto and --branch go together: --onto REV --branch NEW.",
                                     param_hint="--onto/--branch")
        if target is not None and no_scripts:
            raise typer.BadParameter("--onto re-runs every op to build the new branch, so it "
                                     "cannot leave scripts unrun; drop --no-scripts.",
                                     param_hint="--no-scripts")
        with _render().ReplayProgress(enabled=not as_json) as progress:
            try:
                if target is not None and new_branch is not None:
                    report = replay_onto(ws, tip, target, new_branch, base, progress.update)
                else:
                    report = run_replay(ws, tip, base, progress.update, scripts=not no_scripts)
            except BadRange as e:
                raise typer.BadParameter(str(e), param_hint=e.option) from None
            except BadNewBranch as e:
                raise typer.BadParameter(str(e), param_hint="--branch") from None
    if as_json:
        _emit_json(report.as_json())
    else:
        _render().replay_report(report)
    if not report.ok:
        raise typer.Exit(1)
