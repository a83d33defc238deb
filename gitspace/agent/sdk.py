"""Adapters for people who drive gitspace with the Anthropic SDK's own tool runner
(``client.beta.messages.tool_runner``) instead of gitspace's loop.

Invariant: every call goes through ``Workspace.call``, exactly as gitspace's own loop makes it, so
ops, refusals and result texts are the same whichever loop runs; a failed call reaches the runner
as the SDK's ``ToolError``, which it sends back with ``is_error: true``. The SDK is imported only
when an adapter is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..tools.registry import all_tools

if TYPE_CHECKING:  # the SDK is an optional, heavy dependency: never imported at run time here
    from anthropic.lib.tools import BetaAbstractMemoryTool, BetaFunctionTool
    from anthropic.types.beta import BetaCacheControlEphemeralParam

    from ..core.workspace import Workspace


def _text_or_tool_error(ws: Workspace, name: str, args: dict[str, Any]) -> str:
    from anthropic.lib.tools import ToolError

    result = ws.call(name, args)
    if not result.ok:
        raise ToolError(result.text)
    return result.text


def memory_tool(ws: Workspace, *,
                cache_control: BetaCacheControlEphemeralParam | None = None) -> BetaAbstractMemoryTool:
    """The SDK memory tool (``{"type": "memory_20250818", "name": "memory"}``) backed by
    gitspace: each change is one op in ``ws``, view is read-only. The SDK does not pass the
    tool_use id to it, so these ops carry none."""
    from anthropic.lib.tools import BetaAbstractMemoryTool

    def run(self: Any, command: Any) -> str:
        return _text_or_tool_error(ws, "memory", command.to_dict())

    # Every command goes the same way: the memory tool of the registry validates and dispatches.
    methods = dict.fromkeys(("view", "create", "str_replace", "insert", "delete", "rename"), run)
    GitspaceMemoryTool = type("GitspaceMemoryTool", (BetaAbstractMemoryTool,), methods)
    return GitspaceMemoryTool(cache_control=cache_control)


def runnable_tools(ws: Workspace) -> list[BetaFunctionTool[Any]]:
    """One SDK function tool per gitspace tool (built-ins and the workspace's constraint scripts),
    except the ones Anthropic defines itself, such as memory: use ``memory_tool`` for that."""
    from anthropic.lib.tools import BetaFunctionTool

    def runner(name: str) -> Any:
        def run(**args: Any) -> str:
            return _text_or_tool_error(ws, name, args)

        run.__name__ = name
        return run

    made = []
    for name, tool in all_tools(ws).items():
        if tool.wire_type is not None:
            continue
        definition = tool.definition()
        made.append(BetaFunctionTool(runner(name), name=name, description=definition["description"],
                                     input_schema=definition["input_schema"]))
    return made
