"""Long output on a terminal goes through the user's pager, as git's does.

Invariant: only a terminal gets a pager (a pipe, a file or ``--no-pager`` get the output
directly), and a pager that quits early (q in less) ends the output quietly, never with a
BrokenPipeError traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from .. import config

TYPE_CHECKING = False  # typing is not imported at run time (nor shlex, shutil: a pipe needs none)
if TYPE_CHECKING:
    from typing import IO


def wanted(enabled: bool) -> bool:
    if not enabled or not sys.stdout.isatty():
        return False
    import shlex
    import shutil

    command = config.pager_command()
    try:
        program = shlex.split(command)[0] if command else None
    except ValueError:
        return False
    return program is not None and shutil.which(program) is not None  # no less: print directly


@contextmanager
def paged(enabled: bool) -> Iterator[IO[str]]:
    """A text stream for the output: the pager's stdin, or stdout when there is no pager."""
    if not wanted(enabled):
        yield sys.stdout
        return
    import subprocess

    command = config.pager_command()
    assert command is not None
    proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, text=True,
                            env=config.pager_environment())
    assert proc.stdin is not None
    try:
        yield proc.stdin
    except BrokenPipeError:
        pass  # the pager quit before reading everything
    finally:
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
        proc.wait()
