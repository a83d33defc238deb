"""The command line: parse, call the library, render. No logic lives here.

One error handler (``main``): expected errors (GitspaceError) print a sentence and a hint and exit
1; usage errors exit 2 (typer); anything else is a bug and exits 3; Ctrl-C exits 130.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from . import config
from .errors import BadArguments, GitspaceError

app = typer.Typer(
    help="A workspace for AI agents that is an ordinary git repository.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
)

_state: dict[str, Any] = {"dir": ".", "agent": None}

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@app.callback()
def _global(
    directory: Annotated[Path, typer.Option("-C", help="Run as if started in this folder.")] = Path("."),
    agent: Annotated[Optional[str], typer.Option(help="Agent name recorded on ops.")] = None,  # noqa: UP045
) -> None:
    _state["dir"] = directory
    _state["agent"] = agent or config.default_agent()


def _open(**extra: Any) -> Any:
    from .attach import route
    from .workspace import open as open_ws

    # With --agent NAME in a checkout where NAME is attached, work in NAME's worktree.
    return open_ws(route(_state["dir"], _state["agent"]), agent=_state["agent"],
                   max_file_bytes=config.max_file_bytes(), **extra)


def _render() -> Any:
    from . import render

    return render


def _emit_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _result(result: Any, as_json: bool = False) -> None:
    if as_json:
        _emit_json({"ok": result.ok, "text": result.text, "tool": result.tool, "op": result.op,
                    "commit": result.commit, "changed": result.changed,
                    "external_op": result.external_op})
    else:
        _render().result(result)
    if not result.ok:
        raise typer.Exit(1)


def _call(tool: str, args: dict[str, Any], as_json: bool = False) -> None:
    with _open() as ws:
        _result(ws.call(tool, args), as_json)


@app.command()
def init(directory: Annotated[Path, typer.Argument()] = Path(".")) -> None:
    """Make DIRECTORY a new workspace (a git repository the agent owns)."""
    from .workspace import init as init_ws

    target = directory if directory.is_absolute() else Path(_state["dir"]) / directory
    with init_ws(target, agent=_state["agent"], max_file_bytes=config.max_file_bytes()) as ws:
        typer.echo(f"Initialised gitspace workspace in {ws.root} on branch {ws.branch()}.")


@app.command()
def status(as_json: JsonOpt = False) -> None:
    """Branch, tip op, and outside changes not yet snapshotted."""
    from .snapshot import pending_changes

    with _open() as ws:
        changes, skipped = pending_changes(ws)
        data = {"root": str(ws.root), "branch": ws.branch(), "tip": ws.tip(),
                "pending": sorted(changes), "too_large": skipped}
        _emit_json(data) if as_json else _render().status(data)


@app.command()
def log(
    n: Annotated[int, typer.Option("-n", help="How many ops.")] = 20,
    rev: Annotated[Optional[str], typer.Argument(help="Branch or revision.")] = None,  # noqa: UP045
    as_json: JsonOpt = False,
) -> None:
    """The op timeline: time, agent, tool, args, files touched, checkpoints."""
    from . import history

    with _open() as ws:
        entries = history.timeline(ws, n, rev)
        _emit_json([e.as_json() for e in entries]) if as_json else _render().timeline(entries)


@app.command()
def show(ref: str, as_json: JsonOpt = False) -> None:
    """One op (by op id) or any commit: its record and its diff."""
    from . import history

    with _open() as ws:
        entry = history.find(ws, ref)
        if as_json:
            _emit_json(entry.as_json())
            return
        _render().op_detail(entry)
        parent = f"{entry.commit}^" if ws.repo.commit(entry.commit).parents else None
        args = ["diff", "--stat", "-p", parent, entry.commit] if parent else [
            "show", "--format=", entry.commit]
        sys.stdout.write(ws.repo.git(*args).decode(errors="replace"))


@app.command()
def diff(a: str, b: Annotated[Optional[str], typer.Argument()] = None) -> None:  # noqa: UP045
    """Diff between two ops/revisions/checkpoints (B defaults to the branch tip)."""
    from . import history

    with _open() as ws:
        left = history.find(ws, a).commit
        right = history.find(ws, b).commit if b else ws.tip()
        sys.stdout.write(ws.repo.git("diff", left, right).decode(errors="replace"))


@app.command(name="checkpoints")
def checkpoints_cmd(as_json: JsonOpt = False) -> None:
    """List checkpoints."""
    from . import checkpoints

    with _open() as ws:
        rows = checkpoints.listing(ws)
        _emit_json([vars(c) for c in rows]) if as_json else _render().checkpoints(rows)


@app.command(name="branches")
def branches_cmd(as_json: JsonOpt = False) -> None:
    """List branches."""
    from . import branches

    with _open() as ws:
        rows = branches.listing(ws)
        _emit_json([vars(b) for b in rows]) if as_json else _render().branches(rows)


@app.command()
def tools(as_json: JsonOpt = False) -> None:
    """List every tool an agent can call, with its example."""
    from .constraint_tools import catalog
    from .tools import all_tools, builtin_tools

    with _open() as ws:
        found = all_tools(ws)
        cat = catalog(ws)
        reserved = set(builtin_tools())
        notes = [f"workspace script {n} overrides the built-in script" for n in cat.overridden]
        notes += [f"script {n} is ignored: a built-in tool has that name"
                  for n in cat.scripts if n in reserved]
        notes += [str(e) for e in cat.errors]
        if as_json:
            _emit_json({"tools": [{**t.definition(), "mutates": t.mutates, "origin": t.origin,
                                   "example": t.example} for t in found.values()],
                        "notes": notes})
        else:
            _render().tools(list(found.values()), notes)


@app.command()
def call(
    tool: str,
    args: Annotated[str, typer.Option("--args", help="Arguments as a JSON object.")] = "{}",
    as_json: JsonOpt = False,
) -> None:
    """Run any tool exactly as an agent would."""
    try:
        parsed = json.loads(args)
    except ValueError as e:
        raise BadArguments(f"--args is not valid JSON: {e}.",
                           hint='Quote it for the shell, e.g. --args \'{"path": "notes"}\'.') from None
    if not isinstance(parsed, dict):
        raise BadArguments("--args must be a JSON object, like '{\"path\": \"notes\"}'.")
    _call(tool, parsed, as_json)


@app.command()
def checkpoint(name: str, message: Annotated[str, typer.Option("-m")] = "") -> None:
    """Save the current state as checkpoint NAME."""
    _call("checkpoint", {"name": name, **({"message": message} if message else {})})


@app.command()
def restore(name: str) -> None:
    """Make the files equal checkpoint NAME again (a new op; nothing is lost)."""
    _call("restore", {"name": name})


@app.command()
def undo(
    count: Annotated[Optional[int], typer.Option(help="Undo this many ops.")] = None,  # noqa: UP045
    op: Annotated[Optional[str], typer.Option(help="Undo this one op.")] = None,  # noqa: UP045
) -> None:
    """Revert the latest op (or several, or one by id) as a new op."""
    args: dict[str, Any] = {}
    if count is not None:
        args["count"] = count
    if op is not None:
        args["op"] = op
    _call("undo", args)


@app.command()
def redo() -> None:
    """Re-apply what the last undo reverted."""
    _call("redo", {})


@app.command()
def branch(
    name: str,
    start: Annotated[Optional[str], typer.Option("--from", help="Checkpoint to fork at.")] = None,  # noqa: UP045
    no_switch: Annotated[bool, typer.Option("--no-switch")] = False,
) -> None:
    """Create branch NAME (at a checkpoint with --from) and switch to it."""
    args: dict[str, Any] = {"name": name, "switch": not no_switch}
    if start:
        args["from"] = start
    _call("branch", args)


@app.command()
def switch(name: str) -> None:
    """Switch to branch NAME (refused if it would overwrite unrecorded changes)."""
    _call("switch", {"name": name})


@app.command()
def snapshot(author: Annotated[str, typer.Option(help="Who made the changes.")] = "human") -> None:
    """Commit all pending outside changes as one op (source: external)."""
    with _open(external_author=author) as ws:
        _result(ws.snapshot())


@app.command()
def verify(
    rev: Annotated[Optional[str], typer.Argument()] = None,  # noqa: UP045
    as_json: JsonOpt = False,
) -> None:
    """Re-parse every op of a branch; exit 1 if any is malformed."""
    from . import history

    with _open() as ws:
        report = history.verify(ws, rev)
        if as_json:
            _emit_json({"ok": report.ok, "commits": report.commits, "ops": report.ops,
                        "foreign": report.foreign,
                        "problems": [{"commit": c, "problem": p} for c, p in report.problems]})
        else:
            _render().verify(report)
        if not report.ok:
            raise typer.Exit(1)


@app.command()
def demo(
    directory: Annotated[Optional[Path], typer.Option("--dir", help="A new folder for the copy.")] = None,  # noqa: UP045,E501
    model: Annotated[Optional[str], typer.Option(help="Let Claude play instead (needs ANTHROPIC_API_KEY).")] = None,  # noqa: UP045,E501
) -> None:
    """Two agents (maze, journal) on a fresh copy of the sample workspace, then its history."""
    from .demo import run_demo

    key = config.anthropic_api_key()
    if model and not key:
        raise BadArguments("--model needs ANTHROPIC_API_KEY.", hint="Drop --model to run offline.")
    run_demo(directory, typer.echo, model=model, api_key=key, base_url=config.anthropic_base_url())


@app.command()
def run(
    task: Annotated[Optional[str], typer.Argument(help="What the agent should do.")] = None,  # noqa: UP045
    policy: Annotated[Optional[str], typer.Option(help="Offline scripted policy: maze or journal.")] = None,  # noqa: UP045,E501
    model: Annotated[Optional[str], typer.Option(help="Claude model (needs ANTHROPIC_API_KEY).")] = None,  # noqa: UP045,E501
    max_steps: Annotated[int, typer.Option(min=1, help="Model calls allowed in this run.")] = 40,
    resume: Annotated[Optional[str], typer.Option(help="Continue this saved session.")] = None,  # noqa: UP045
    budget: Annotated[int, typer.Option(min=2000,
                                        help="Conversation characters before compaction.")] = 60_000,
    commit_transcript: Annotated[bool, typer.Option(
        help="Also commit the conversation to transcripts/ (it may hold sensitive text).")] = False,
    watch_edits: Annotated[bool, typer.Option("--watch", help=(
        "Also record outside edits (shell tools, people) as ops while the run lasts."))] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run an agent on the workspace: Claude with an API key, else an offline scripted policy."""
    from .agent import runner
    from .agent.loop import Loop, Options
    from .agent.session import Session

    if (task is None) == (resume is None):
        raise BadArguments("Give a TASK, or --resume SESSION to continue one (not both).")
    real = {"api_key": config.anthropic_api_key(), "base_url": config.anthropic_base_url()}
    with _open() as ws:
        if resume:
            saved = Session.load(ws.root, resume)
            client = runner.client_for_session(saved.scripted, saved.client, model=model, **real)
        else:
            client = runner.make_client(policy=policy, model=model, **real)
        label = getattr(client, "label", None) or f"model {client.name}"
        if not as_json:
            typer.echo(f"Running {label} on {ws.root} (up to {max_steps} model calls).")

        def show(event: Any) -> None:
            line = runner.describe(event)
            if line and not as_json:
                typer.echo(line)

        loop = Loop(ws, client, Options(max_steps=max_steps, budget=budget), show)
        watcher = _start_watcher(ws.root, quiet=as_json) if watch_edits else None
        try:
            outcome = loop.resume(resume) if resume else loop.start(task or "")
        finally:
            if watcher is not None:
                watcher.stop()
        if commit_transcript:
            from .agent.transcript import commit_transcript as commit

            committed = commit(ws, outcome.session)
            if not as_json:
                typer.echo(committed.text)
    _render().outcome(outcome, as_json)
    if not outcome.ok:
        raise typer.Exit(1)


@app.command()
def sessions(as_json: JsonOpt = False) -> None:
    """List the saved agent sessions of this workspace (newest last)."""
    from .agent.session import listing

    with _open() as ws:
        _render().sessions(listing(ws.root), as_json)


@app.command(name="mcp")
def mcp_cmd(
    transport: Annotated[str, typer.Option(help="stdio (the client starts gitspace) or http.")] = "stdio",
    host: Annotated[str, typer.Option(help="Address to listen on (http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on (http).")] = 8765,
) -> None:
    """Serve this workspace's tools, op log, checkpoints and files to MCP clients."""
    from . import mcp_server

    if transport not in ("stdio", "http"):
        raise typer.BadParameter("use stdio or http.", param_hint="--transport")
    from .attach import route

    root = route(_state["dir"], _state["agent"])  # --agent NAME serves NAME's attached worktree
    mcp_server.serve(root, transport, host, port, default_agent=_state["agent"],
                     max_file_bytes=config.max_file_bytes(),
                     announce=lambda line: typer.echo(line, err=True))  # stdout is the protocol's


@app.command()
def replay(
    branch: Annotated[Optional[str], typer.Argument(help="Branch or revision (default: the current branch).")] = None,  # noqa: UP045,E501
    start: Annotated[Optional[str], typer.Option("--from", help="Replay only the ops after this revision.")] = None,  # noqa: UP045,E501
    onto: Annotated[Optional[str], typer.Option("--onto", help="Re-run the ops on this revision instead, into a new branch.")] = None,  # noqa: UP045,E501
    new_branch: Annotated[Optional[str], typer.Option("--branch", help="With --onto: the branch to create.")] = None,  # noqa: UP045,E501
    as_json: JsonOpt = False,
) -> None:
    """Re-run a branch's ops in a scratch copy; exit 1 at the first that does not rebuild its files."""
    from . import branches
    from .onto import replay_onto
    from .replay import BadRange
    from .replay import replay as run_replay

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
        if new_branch is not None:
            try:
                branches.check_name(new_branch)
            except BadArguments as e:
                raise typer.BadParameter(e.message, param_hint="--branch") from None
            if ws.repo.read_ref(f"refs/heads/{new_branch}") is not None:
                raise typer.BadParameter(f"branch {new_branch!r} already exists; replay --onto "
                                         "never moves a branch.", param_hint="--branch")
        with _render().ReplayProgress(enabled=not as_json) as progress:
            try:
                if target is not None and new_branch is not None:
                    report = replay_onto(ws, tip, target, new_branch, base, progress.update)
                else:
                    report = run_replay(ws, tip, base, progress.update)
            except BadRange as e:
                raise typer.BadParameter(str(e), param_hint="--from") from None
    _emit_json(report.as_json()) if as_json else _render().replay_report(report)
    if not report.ok:
        raise typer.Exit(1)


def _report_line(report: Any) -> None:
    typer.echo(report.text, err=report.kind == "error")


def _start_watcher(root: Path, quiet: bool) -> Any:
    """A running watcher for ``gitspace run --watch`` (stop it when the run ends)."""
    from .watch import Watcher

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

    from .watch import Watcher

    target = Path(_state["dir"]) / directory if directory else Path(_state["dir"])
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
        watcher.stop()
    typer.echo(f"Stopped watching {watcher.root}: pending edits committed, "
               f"{watcher.stats.commits} op(s) recorded in all.")


@app.command()
def attach(
    repo: Annotated[Optional[Path], typer.Argument(help="The repository (default: here).")] = None,  # noqa: UP045,E501
    agent: Annotated[Optional[str], typer.Option(help="The agent's name.")] = None,  # noqa: UP045
    as_json: JsonOpt = False,
) -> None:
    """Give an agent its own branch (agent/NAME) and worktree in an existing repository."""
    from .attach import attach as attach_agent

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
    from .attach import agents as list_agents

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
    from .merge import merge

    _render().merged(merge(_state["dir"], name, into))


@app.command()
def detach(
    name: str,
    force: Annotated[bool, typer.Option(help="Also throw away changes no op recorded.")] = False,
) -> None:
    """Remove agent NAME's worktree; its branch stays."""
    from .attach import detach as detach_agent

    _render().detached(detach_agent(_state["dir"], name, force))


SyncBranches = Annotated[Optional[list[str]], typer.Option("--branch", help="Also this branch (repeatable).")]  # noqa: UP045,E501


@app.command()
def push(remote: Annotated[str, typer.Argument()] = "origin", branch: SyncBranches = None) -> None:
    """Push gitspace branches and checkpoints to REMOTE (never forced)."""
    from . import sync

    with _open() as ws:
        _render().synced(sync.push(ws, remote, tuple(branch or ())), "push")


@app.command()
def pull(remote: Annotated[str, typer.Argument()] = "origin", branch: SyncBranches = None) -> None:
    """Fetch from REMOTE and fast-forward gitspace branches and checkpoints (never forced)."""
    from . import sync

    with _open() as ws:
        _render().synced(sync.pull(ws, remote, tuple(branch or ())), "pull")


def main() -> None:
    try:
        app()
    except GitspaceError as e:
        _render().error(e)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 — the one place bugs are reported
        _render().bug(e)
        sys.exit(3)
