"""gitspace: a workspace for AI agents that is an ordinary git repository.

    ws = gitspace.init("work")          # or gitspace.open("work")
    result = ws.call("create", {"path": "notes/todo.md", "file_text": "- explore\\n"})
    result.ok, result.text, result.op, result.commit

The names below are loaded on first use, so that a process needing only a part of gitspace (a
harness's hook call) does not pay for the rest.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a harness's hook imports this package and never typing
if TYPE_CHECKING:
    from typing import Any

    from .api import init, open
    from .core.result import Result
    from .core.workspace import Workspace
    from .errors import GitspaceError

__version__ = "0.1.0"
__all__ = ["GitspaceError", "Result", "Workspace", "init", "open"]
_WHERE = {"GitspaceError": "errors", "Result": "core.result", "Workspace": "core.workspace",
          "init": "api", "open": "api"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'gitspace' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{_WHERE[name]}", __name__), name)
