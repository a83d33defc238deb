"""The MCP server of one workspace: the SDK's server with every request wired to its handler
(``handlers.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__, api
from . import handlers
from .served import Served

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server


def workspace_root(path: str | Path) -> Path:
    """The root of the workspace at ``path``: a GitspaceError now rather than on first use."""
    with api.open(path) as ws:
        return ws.root


# -- the server ------------------------------------------------------------------------------


def build_server(root: str | Path, *, default_agent: str | None = None,
                 max_file_bytes: int = 1 << 20) -> Server[Any]:
    """An MCP server for the workspace at ``root`` (GitspaceError now if it is not one)."""
    return server_for(workspace_root(root), default_agent=default_agent,
                      max_file_bytes=max_file_bytes)


def server_for(base: Path, *, default_agent: str | None, max_file_bytes: int) -> Server[Any]:
    """The SDK's server for ``base``, every request wired to its handler (``handlers.py``)."""
    from functools import partial

    from mcp import types
    from mcp.server.lowlevel import NotificationOptions, Server

    served = Served(base, default_agent, max_file_bytes)

    class GitspaceServer(Server[Any]):
        def create_initialization_options(self, notification_options: Any = None,
                                          *args: Any, **kwargs: Any) -> Any:
            # Tools come and go with the workspace's scripts; resources and prompts are fixed.
            return super().create_initialization_options(
                notification_options or NotificationOptions(tools_changed=True), *args, **kwargs)

    server = GitspaceServer(
        "gitspace",
        version=__version__,
        instructions=f"Tools and history of the gitspace workspace {base}. Every change a tool "
        "makes is one git commit; checkpoint before risky steps, undo reverts.",
        lifespan=partial(handlers.lifespan, served),
        # gitspace's schemas declare no Mcp-Param headers: nothing to look up per call.
        get_tool_input_schema=lambda name: None,
        on_list_tools=partial(handlers.list_tools, served),
        on_call_tool=partial(handlers.call_tool, served),
        on_list_resources=partial(handlers.list_resources, served),
        on_list_resource_templates=partial(handlers.list_templates, served),
        on_read_resource=partial(handlers.read_resource, served),
        on_subscribe_resource=partial(handlers.subscribe, served),
        on_unsubscribe_resource=partial(handlers.unsubscribe, served),
        on_subscriptions_listen=partial(handlers.listen, served),
        on_list_prompts=partial(handlers.list_prompts, served),
        on_get_prompt=partial(handlers.get_prompt, served),
        on_completion=partial(handlers.completion, served),
    )
    # Registered by hand: the constructor's on_set_logging_level warns that 2026 drops logging,
    # and gitspace serves 2025 clients, which use it.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams,
                               partial(handlers.set_level, served))
    return server
