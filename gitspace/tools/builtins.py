"""Every built-in tool, in one list: to add a tool, write it (``registry.builtin``) and list it here.

Invariant: this list is the only place built-in tools are named; nothing is registered by
importing a module. Constraint scripts join them through ``registry()``, the registry every
workspace gets from ``gitspace.open`` and ``gitspace.init``; a registry reads ``BUILTINS`` when
it is used, so a tool a test adds (``monkeypatch.setitem(BUILTINS, name, tool)``) is offered by
workspaces already open.
"""

from __future__ import annotations

from . import files, history, memory, plan, scripts
from .registry import Registry, Tool

BUILTINS: dict[str, Tool] = {tool.name: tool for tool in (
    files.view,
    files.create,
    files.str_replace,
    files.insert,
    files.append,
    files.delete,
    files.rename,
    files.search,
    history.checkpoint,
    history.restore,
    history.undo_tool,
    history.redo_tool,
    history.branch_tool,
    history.switch_tool,
    history.log_tool,
    plan.plan_add,
    plan.plan_done,
    plan.plan_show,
    memory.memory,
)}


def restoring() -> dict[str, str]:
    """Tool name -> the argument naming the checkpoint its op brings back, for readers of the
    history that draw or follow restores (the web view, replay onto another base)."""
    return {name: tool.restores_checkpoint for name, tool in BUILTINS.items()
            if tool.restores_checkpoint is not None}


def registry() -> Registry:
    """The registry of a workspace: the built-ins above and the workspace's constraint scripts."""
    return Registry(BUILTINS, scripts.script_tools)
