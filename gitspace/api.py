"""The public way in: open or make a workspace wired with the built-in tools.

Invariant: every workspace gitspace opens for someone (the CLI, MCP, the agent, the watcher,
replay's scratch copy) gets its tools here, so the core never imports the tools it runs.
"""

from __future__ import annotations

import os
from typing import Any

from . import config
from .core import workspace
from .core.workspace import Workspace
from .tools.builtins import registry


def open(path: str | os.PathLike[str] = ".", **options: Any) -> Workspace:  # noqa: A001
    """Open the workspace containing ``path``, finishing any op a crash interrupted.

    Any checkout opens, for reading; ops are refused in one gitspace does not own."""
    return workspace.open(path, **_wired(options))


def init(path: str | os.PathLike[str], **options: Any) -> Workspace:
    """Make ``path`` a new workspace (``branch="main"``); files already there become its first
    commit."""
    return workspace.init(path, **_wired(options))


def _wired(options: dict[str, Any]) -> dict[str, Any]:
    """The built-in tools, and what the process environment says (config is read here, once
    per open, never per op)."""
    options.setdefault("tools", registry())
    options.setdefault("pack_threshold", config.pack_threshold())
    return options
