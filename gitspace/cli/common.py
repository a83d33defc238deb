"""What every command module shares: the global options, opening the workspace, and output.

Invariant: command modules import this module and the library, never the app (``cli/__init__``)
and never each other. Output goes through ``render`` (rich, imported on first use so plain
commands start fast) or the plain emitters below; nothing else in the CLI writes to the terminal.
Usage errors (how a command was typed: an unknown option, a bad value, malformed ``--args``)
raise ``usage`` and exit 2; everything the library refuses exits 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, NoReturn, Optional

import typer

from .. import __version__, config
from . import jsonout
from .options import Color, colour_on, state  # noqa: F401  (re-exported)

JsonOpt = Annotated[bool, typer.Option(
    "--json", help="Print JSON (docs/json.md); --json=a,b keeps only those fields.")]


def usage(message: str) -> NoReturn:
    """A usage error: said with the command's usage line, exit 2."""
    raise typer.BadParameter(message)


def _version(value: bool) -> None:
    if value:  # (the formats it reads: 'gitspace verify'; the JSON schema: docs/json.md)
        echo(f"gitspace {__version__}")
        raise typer.Exit()


def global_options(
    directory: Annotated[Path, typer.Option("-C", help="Run as if started in this folder.")] = Path("."),
    agent: Annotated[Optional[str], typer.Option(help="Agent name recorded on ops.")] = None,  # noqa: UP045
    color: Annotated[Color, typer.Option(
        help="Colour output: auto (a terminal, unless NO_COLOR is set), always or never.")
    ] = Color.auto,
    no_pager: Annotated[bool, typer.Option(
        "--no-pager", help="Print long output directly instead of through a pager.")] = False,
    version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """A workspace for AI agents that is an ordinary git repository."""
    state.directory = directory
    state.agent = agent or config.default_agent()
    state.color = color
    state.pager = not no_pager


_GLOBAL_VALUES = ("-C", "--agent", "--color")  # global options that take a value


def take_arguments(argv: list[str]) -> list[str]:
    """``argv`` without what typer cannot parse: ``--json=FIELDS`` (gh's field selection: it
    becomes ``--json``, the fields go to ``state``) and, for ``log``, the paths after ``--``
    (any other command gets its ``--`` as typer reads it). Raises jsonout.UnknownField for an
    empty selection."""
    out: list[str] = []
    command = None
    for i, arg in enumerate(argv):
        if arg == "--":
            if command == "log":
                state.paths = argv[i + 1:]
                return out
            return out + argv[i:]
        if arg.startswith("--json="):
            state.json_fields = jsonout.parse_fields(arg[len("--json="):])
            arg = "--json"
        elif command is None and not arg.startswith("-") and (
                not out or out[-1] not in _GLOBAL_VALUES):
            command = state.command = arg
        out.append(arg)
    return out


def here(path: Path | None = None) -> Path:
    """``path`` taken relative to ``-C`` (the ``-C`` folder itself when None)."""
    if path is None:
        return Path(state.directory)
    return path if path.is_absolute() else Path(state.directory) / path


def open_workspace(*, author: str | None = None, **extra: Any) -> Any:
    """The workspace the command works on, as ``-C`` and ``--agent`` say. The person's edits
    and the ops they make with no agent are theirs: ``author`` (``--author``), else
    GITSPACE_AUTHOR, else their git user.name (core/person.py, read only when needed)."""
    import gitspace

    from ..team.attach import route

    # --agent NAME works in NAME's attached worktree, and is refused where NAME is not attached
    # (route). Ops are refused in a checkout gitspace does not own (owner.py); reads work anywhere.
    return gitspace.open(route(state.directory, state.agent), agent=state.agent,
                         max_file_bytes=config.max_file_bytes(),
                         person=author or config.default_author(), **extra)


def person_of(root: Path, explicit: str | None) -> str:
    """The name a person's edits in ``root`` are recorded under (see ``open_workspace``)."""
    from ..core import person
    from ..storage.gitrepo import GitRepo

    repo = GitRepo.open(root)
    try:
        return person.person_token(repo, explicit)
    finally:
        repo.close()


def in_place(ws: Any) -> Any:
    """In a checkout of the person's own where calls are recorded in place (core/line.py):
    where its line is (``line.Where``); None anywhere else."""
    from ..core import line

    if not line.in_place(ws.repo) or ws.owned:
        return None
    try:
        return line.where(ws.repo)
    except line.NothingToFollow:
        return None


def take_paths() -> list[str]:
    """The paths given after ``--`` (only commands that take paths call this)."""
    paths, state.paths = state.paths, []
    return paths


def find_entry(ws: Any, text: str) -> Any:
    """The timeline entry a person named: an op id or the part of one log shows, a checkpoint,
    a branch or any revision (the library's finder; ambiguity is its error)."""
    from ..core import timeline

    return timeline.find(ws, text)


def progress_shown(enabled: bool = True) -> Any:
    """A context in which the progress the library reports is shown on stderr (a bar on a
    terminal, plain lines elsewhere: ``render.shown``)."""
    return render().shown(enabled)


def render() -> ModuleType:
    from . import render as module

    return module


def echo(text: str, *, err: bool = False) -> None:
    typer.echo(text, err=err)


def emit_json(data: Any, kind: str | None = None) -> None:
    """``data`` as JSON, keeping only the ``--json=`` fields when some were named (a name that
    ``kind`` does not emit is a usage error)."""
    fields = state.json_fields
    if fields is not None and kind is not None:
        try:
            jsonout.check(kind, fields)
        except jsonout.UnknownField as e:
            usage(str(e))
    typer.echo(jsonout.dumps(jsonout.select(data, fields)))


def write_raw(data: bytes, stream: Any = None) -> None:
    """Bytes git produced (a diff), passed through as text (to ``stream``: the pager's)."""
    (stream or sys.stdout).write(data.decode(errors="replace"))


def show_result(result: Any, as_json: bool = False) -> None:
    """A tool call's result, as text or JSON; exit 1 when it failed."""
    if as_json:
        from ..storage.ledger import short_id

        emit_json({"ok": result.ok, "text": result.text, "tool": result.tool, "op": result.op,
                   "op_short": short_id(result.op) if result.op else None,
                   "commit": result.commit, "changed": result.changed,
                   "external_op": result.external_op, "notes": result.notes}, "result")
    else:
        render().result(result)
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
    from ..team.watch import Watcher

    watcher = Watcher(root, author=config.default_author(),
                      max_file_bytes=config.max_file_bytes(),
                      on_report=None if quiet else report_line)
    watcher.start()
    return watcher
