"""The global options of one CLI run (given before the command), and whether output is coloured.

Invariant: this module imports nothing of the CLI, so both ``common`` (which sets ``state``) and
``render`` (which reads it) import it without importing each other.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path

from .. import config

TYPE_CHECKING = False  # typing is not imported at run time: a read starts without it
if TYPE_CHECKING:
    from typing import Any


class Color(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


class Globals:
    """The options given before the command, and what ``main`` took out of the arguments:
    ``--json=FIELDS`` and the paths after ``--``."""

    def __init__(self) -> None:
        self.directory = Path(".")
        self.agent: str | None = None
        self.color = Color.auto
        self.pager = True
        self.json_fields: list[str] | None = None
        self.paths: list[str] = []
        self.command: str | None = None  # the command named on the command line (take_arguments)
        self.at = 0  # where in the arguments it is named
        self.plain = False  # params.parse read them, not typer (a usage error goes back to typer)


state = Globals()


def colour_on(stream: Any = None) -> bool:
    """Should output to ``stream`` (default stdout) carry colour? (--color, NO_COLOR, a tty)"""
    if state.color is Color.always:
        return True
    if state.color is Color.never or config.no_color():
        return False
    return bool((stream or sys.stdout).isatty())
