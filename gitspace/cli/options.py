"""The global options of one CLI run (given before the command), and whether output is coloured.

Invariant: this module imports nothing of the CLI, so both ``common`` (which sets ``state``) and
``render`` (which reads it) import it without importing each other.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from .. import config


class Color(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


@dataclass
class Globals:
    """The options given before the command, and what ``main`` took out of the arguments:
    ``--json=FIELDS`` and the paths after ``--``."""

    directory: Path = Path(".")
    agent: str | None = None
    color: Color = Color.auto
    pager: bool = True
    json_fields: list[str] | None = None
    paths: list[str] = field(default_factory=list)
    command: str | None = None  # the command named on the command line (take_arguments)


state = Globals()


def colour_on(stream: Any = None) -> bool:
    """Should output to ``stream`` (default stdout) carry colour? (--color, NO_COLOR, a tty)"""
    if state.color is Color.always:
        return True
    if state.color is Color.never or config.no_color():
        return False
    return bool((stream or sys.stdout).isatty())
