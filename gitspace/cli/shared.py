"""What every command shares and a read needs, without typer or rich: the global options, the
arguments ``main`` takes out, opening the workspace, finding what a person names, and output.

Invariant: this module imports neither typer nor rich (``tests/test_cli_reads.py`` pins what a
read imports), so a read command (``cli/reads.py``) runs on it alone; ``common`` adds what the
other commands share and re-exports these. Output goes through the emitters below or through
``render`` (rich, imported on first use); nothing else in the CLI writes to the terminal.
A usage error (how a command was typed) is typer's to word: ``usage`` raises typer's own when
typer parsed the command line, and ``Usage`` when ``params.parse`` did, which ``main`` answers by
running the command line again through typer.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .. import __version__, config
from . import jsonout
from .options import Color, state
from .params import Option, declare

TYPE_CHECKING = False  # typing is not imported at run time: a read starts without it
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, NoReturn


class Usage(Exception):
    """A usage error in a command line ``params.parse`` read (see the module's docstring)."""


def usage(message: str) -> NoReturn:
    """A usage error: said with the command's usage line, exit 2."""
    if state.plain:
        raise Usage(message)
    import typer

    raise typer.BadParameter(message)


def _version(value: bool) -> bool:
    """``--version``: print it and exit; otherwise the value stays (click's callbacks answer it)."""
    if value:
        import typer

        from ..storage.ledger import formats_note

        echo(f"gitspace {__version__} (JSON output schema {jsonout.SCHEMA}, {formats_note()})")
        raise typer.Exit()
    return value


@declare(
    directory=Option("-C", help="Run as if started in this folder."),
    agent=Option(help="Agent name recorded on ops."),
    color=Option(help="Colour output: auto (a terminal, unless NO_COLOR is set), always or never."),
    no_pager=Option("--no-pager", help="Print long output directly instead of through a pager."),
    version=Option("--version", callback=_version, is_eager=True,
                   help="Print the version and exit."),
)
def global_options(directory: Path = Path("."), agent: str | None = None,
                   color: Color = Color.auto, no_pager: bool = False,
                   version: bool = False) -> None:
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
    empty selection. ``state.command`` is the command word, ``state.at`` its place in the list."""
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
            state.at = len(out)
        out.append(arg)
    return out


def here(path: Path | None = None) -> Path:
    """``path`` taken relative to ``-C`` (the ``-C`` folder itself when None)."""
    if path is None:
        return Path(state.directory)
    return path if path.is_absolute() else Path(state.directory) / path


def _where() -> Path:
    """The checkout the command works in, as ``-C`` and ``--agent`` say: --agent NAME works in
    NAME's attached worktree, and is refused where NAME is not attached (``route``)."""
    where = Path(state.directory)
    if state.agent:
        from ..team.attach import route

        where = route(where, state.agent)
    return where


def open_workspace(*, author: str | None = None, **extra: Any) -> Any:
    """The workspace the command works on (``_where``). Ops are refused in a checkout gitspace
    does not own (owner.py); reads work anywhere. The person's edits and the ops they make with
    no agent are theirs: ``author`` (``--author``), else GITSPACE_AUTHOR, else their git
    user.name (core/person.py, read only when needed)."""
    import gitspace

    return gitspace.open(_where(), agent=state.agent, max_file_bytes=config.max_file_bytes(),
                         person=author or config.default_author(), **extra)


def open_to_read() -> Any:
    """The checkout a read works on (``_where``), opened to read (``core/view.py``: no tools,
    no op machinery, and an ordinary checkout found without starting git)."""
    from ..core import view

    return view.open(_where(), max_file_bytes=config.max_file_bytes())


def in_place(ws: Any) -> Any:
    """In a checkout of the person's own where calls are recorded in place
    (harness/inplace/line.py): where its line is (``line.Where``); None anywhere else."""
    from ..core import linerefs

    if not linerefs.in_place(ws.repo) or ws.owned:
        return None
    from ..harness.inplace import line

    try:
        return line.where(ws.repo)
    except line.NothingToFollow:
        return None


def take_paths() -> list[str]:
    """The paths given after ``--`` (only commands that take paths call this)."""
    paths, state.paths = state.paths, []
    return paths


def relative(repo: Any, path: str) -> str:
    """``path`` as the work tree's top names it (given relative to -C, or absolute)."""
    import os

    full = Path(path) if os.path.isabs(path) else Path(os.path.abspath(Path(state.directory)
                                                                        / path))
    try:
        return full.relative_to(repo.root.resolve()).as_posix() if full.is_absolute() and \
            full.resolve().is_relative_to(repo.root.resolve()) else path
    except ValueError:
        return path


def find_entry(ws: Any, text: str) -> Any:
    """The timeline entry a person named: an op id or the part of one log shows, a checkpoint,
    a branch or any revision (the library's finder; ambiguity is its error)."""
    from ..core import timeline

    return timeline.find(ws, text)


def render() -> ModuleType:
    from . import render as module

    return module


# What ``render`` prints without colour, in the same words, for the commonest output: a tool
# call's result and an error. Into a pipe, a file or with colour off (scripts, CI, every test)
# a command then never imports rich, which costs a command a third of its start.

def _plain(stream: Any) -> bool:
    from .options import colour_on

    return not colour_on(stream)


def show_result(res: Any) -> None:
    """A tool call's result (``render.result``)."""
    if not (_plain(sys.stdout) and _plain(sys.stderr)):
        render().result(res)
        return
    if not res.ok:
        show_error(res.error or res.text)
    else:
        from ..storage.ledger import short_id

        said = [res.text]
        if res.op:
            extra = (f" (after outside changes, op {short_id(res.external_op)})"
                     if res.external_op else "")
            said.append(f"op {short_id(res.op)} ({res.op}) commit {res.commit[:12]}{extra}")
        echo("\n".join(said))
    for note in getattr(res, "notes", []):
        echo(f"note: {note}", err=True)


def show_error(e: Any, hint: str | None = None) -> None:
    """An expected error and its hint, on stderr (``render.error``)."""
    if not _plain(sys.stderr):
        render().error(e)
        return
    said = [f"error: {getattr(e, 'message', str(e))}"]
    hint = hint or getattr(e, "cli_hint", None) or getattr(e, "hint", None)
    if hint:
        said.append(f"hint: {hint}")
    echo("\n".join(said), err=True)


def show_usage_error(message: str) -> None:
    """A command line gitspace could not read (``render.usage_error``)."""
    if not _plain(sys.stderr):
        render().usage_error(message)
        return
    show_error(message, "'gitspace COMMAND -h' shows how a command is used.")


def echo(text: str, *, err: bool = False) -> None:
    """A message for the person; what it quotes from history never acts on their terminal."""
    from . import lines

    stream = sys.stderr if err else sys.stdout
    stream.write(lines.visible(text) + "\n")
    stream.flush()


def emit_json(data: Any, kind: str | None = None) -> None:
    """``data`` as JSON, keeping only the ``--json=`` fields when some were named (a name that
    ``kind`` does not emit is a usage error)."""
    fields = state.json_fields
    if fields is not None and kind is not None:
        try:
            jsonout.check(kind, fields)
        except jsonout.UnknownField as e:
            usage(str(e))
    echo(jsonout.dumps(jsonout.select(data, fields)))


def write_raw(data: bytes, stream: Any = None) -> None:
    """Bytes git produced (a diff), passed through as text (to ``stream``: the pager's); on a
    terminal with git's colours kept and nothing else a terminal would act on (a file's content
    can hold any such sequence), into a pipe or a file as git wrote them."""
    text = data.decode(errors="replace")
    if sys.stdout.isatty():
        from . import lines

        text = lines.for_terminal(text)
    (stream or sys.stdout).write(text)
