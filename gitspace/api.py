"""The public way in: open or make a workspace wired with the built-in tools.

Invariant: every workspace gitspace opens for someone (the CLI, MCP, the agent, the watcher,
replay's scratch copy) gets its tools here, so the core never imports the tools it runs.
"""

from __future__ import annotations

import os
from typing import Any

from .core import workspace
from .core.workspace import Workspace
from .tools.builtins import registry


def open(path: str | os.PathLike[str] = ".", **options: Any) -> Workspace:  # noqa: A001
    """Open the workspace containing ``path``, finishing any op a crash interrupted.

    Any checkout opens, for reading; ops are refused in one gitspace does not own."""
    options.setdefault("tools", registry())
    return workspace.open(path, **options)


def init(path: str | os.PathLike[str], **options: Any) -> Workspace:
    """Make ``path`` a new workspace (``branch="main"``); files already there become its first
    commit."""
    options.setdefault("tools", registry())
    return workspace.init(path, **options)
