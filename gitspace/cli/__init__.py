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

from .. import config
from ..errors import BadArguments, GitspaceError

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
    from ..core.workspace import open as open_ws
    from ..team.attach import route

    # --agent NAME works in NAME's attached worktree, and is refused where NAME is not attached
    # (route). Ops are refused in a checkout gitspace does not own (owner.py); reads work anywhere.
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
    from ..core.workspace import init as init_ws

    target = directory if directory.is_absolute() else Path(_state["dir"]) / directory
    with init_ws(target, agent=_state["agent"], max_file_bytes=config.max_file_bytes()) as ws:
        typer.echo(f"Initialised gitspace workspace in {ws.root} on branch {ws.branch()}.")


@app.command()
def status(as_json: JsonOpt = False) -> None:
    """Branch, tip op, and outside changes not yet snapshotted."""
    from ..core.snapshot import pending_changes

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
    from ..core import timeline

    with _open() as ws:
        entries = timeline.timeline(ws, n, rev)
        _emit_json([e.as_json() for e in entries]) if as_json else _render().timeline(entries)


@app.command()
def show(ref: str, as_json: JsonOpt = False) -> None:
    """One op (by op id) or any commit: its record and its diff."""
    from ..core import timeline

    with _open() as ws:
        entry = timeline.find(ws, ref)
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
    from ..core import timeline

    with _open() as ws:
        left = timeline.find(ws, a).commit
        right = timeline.find(ws, b).commit if b else ws.tip()
        sys.stdout.write(ws.repo.git("diff", left, right).decode(errors="replace"))


@app.command(name="checkpoints")
def checkpoints_cmd(as_json: JsonOpt = False) -> None:
    """List checkpoints."""
    from ..core import checkpoints

    with _open() as ws:
        rows = checkpoints.listing(ws)
        _emit_json([vars(c) for c in rows]) if as_json else _render().checkpoints(rows)


@app.command(name="branches")
def branches_cmd(as_json: JsonOpt = False) -> None:
    """List branches."""
    from ..core import branches

    with _open() as ws:
        rows = branches.listing(ws)
        _emit_json([vars(b) for b in rows]) if as_json else _render().branches(rows)


@app.command()
def tools(as_json: JsonOpt = False) -> None:
    """List every tool an agent can call, with its example."""
    from ..tools.registry import all_tools, builtin_tools
    from ..tools.scripts import catalog

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
    from ..core import timeline

    with _open() as ws:
        report = timeline.verify(ws, rev)
        if as_json:
            _emit_json({"ok": report.ok, "commits": report.commits, "ops": report.ops,
                        "foreign": report.foreign,
                        "problems": [{"commit": c, "problem": p} for c, p in report.problems]})
        else:
            _render().verify(report)
        if not report.ok:
            raise typer.Exit(1)


# The other commands register themselves on ``app`` (imported here, after app exists).
from . import run, team  # noqa: E402,F401


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
