"""gitspace: a workspace for AI agents that is an ordinary git repository.

    ws = gitspace.init("work")          # or gitspace.open("work")
    result = ws.call("create", {"path": "notes/todo.md", "file_text": "- explore\\n"})
    result.ok, result.text, result.op, result.commit
"""

from __future__ import annotations

from .api import init, open
from .core.result import Result
from .core.workspace import Workspace
from .errors import GitspaceError

__version__ = "0.1.0"
__all__ = ["GitspaceError", "Result", "Workspace", "init", "open"]
