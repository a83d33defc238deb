"""The command line: parse, call the library, render. No logic lives here.

This module is the front door and holds the single error handler (``main``): expected errors
(GitspaceError) print a sentence and a hint and exit 1; usage errors exit 2 (typer); anything
else is a bug and exits 3; Ctrl-C exits 130. A read (``reads.READS``) whose command line
``params.parse`` can read runs without typer; every other run, and a read's help, completion and
usage errors, goes through the typer app of ``commands.py`` (``COMMANDS``, ``build`` and ``app``
are its, reached from here too). Command modules share ``common`` and never import this module.
"""

from __future__ import annotations

import sys

from .. import config
from ..errors import GitspaceError, from_os_error
from . import jsonout, shared
from .options import state

TYPE_CHECKING = False  # typing is not imported at run time: a read starts without it
if TYPE_CHECKING:
    from typing import Any


def __getattr__(name: str) -> Any:
    if name in ("COMMANDS", "GROUPS", "build", "app"):
        from . import commands

        return getattr(commands, name)
    raise AttributeError(f"module 'gitspace.cli' has no attribute {name!r}")


def _run_read(args: list[str]) -> bool:
    """Run the read ``args`` name when ``params.parse`` reads its command line; False for typer
    to run it (another command, completion, help, an option it does not know, a usage error)."""
    if state.command is None or config.completing():
        return False
    from . import params, reads

    command = reads.READS.get(state.command)
    if command is None:
        return False
    given = params.parse(shared.global_options, args[:state.at])
    values = params.parse(command, args[state.at + 1:])
    if given is None or values is None:
        return False
    paths, state.plain = list(state.paths), True
    try:
        shared.global_options(**given)
        command(**values)
    except shared.Usage:  # typer reads it again, and words the error with the usage line
        state.paths = paths
        return False
    except BrokenPipeError:  # a reader such as head stopped reading: as click ends, quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    finally:
        state.plain = False
    return True


def _end_now() -> None:
    """End the process as soon as a read has said everything: its output flushed, nothing left
    open, no thread running; what the interpreter would do next (collecting every object and
    module it loaded) costs a short read a good part of its time, and changes nothing."""
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        os._exit(1)
    os._exit(0)


def main(process: bool = False) -> None:
    """The CLI. ``process``: this is the whole process (``python -m gitspace``, the console
    script), which a read then ends at once (``_end_now``)."""
    try:
        args = shared.take_arguments(sys.argv[1:])
    except jsonout.UnknownField as e:
        shared.show_usage_error(str(e))
        sys.exit(2)
    try:
        if _run_read(args):
            if process:
                _end_now()
        else:
            from .commands import build

            build(state.command, whole=config.completing())(args=args, prog_name="gitspace")
    except GitspaceError as e:
        shared.show_error(e)
        sys.exit(1)
    except OSError as e:  # a full disk, a read-only file: the machine's, not a bug
        expected = from_os_error(e)
        if expected is None:
            shared.render().bug(e)
            sys.exit(3)
        shared.show_error(expected)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except ModuleNotFoundError as e:
        from .. import extras

        missing = extras.for_missing(e)
        if missing is None:
            shared.render().bug(e)
            sys.exit(3)
        shared.show_error(missing)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 — the one place bugs are reported
        shared.render().bug(e)
        sys.exit(3)
