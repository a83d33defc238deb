"""The command that serves the workspace to MCP clients."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import config
from .common import echo, state


def mcp(
    transport: Annotated[str, typer.Option(help="stdio (the client starts gitspace) or http.")] = "stdio",
    host: Annotated[str, typer.Option(help="Address to listen on (http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on (http).")] = 8765,
) -> None:
    """Serve this workspace's tools, op log, checkpoints and files to MCP clients."""
    from .. import mcp_server

    if transport not in ("stdio", "http"):
        raise typer.BadParameter("use stdio or http.", param_hint="--transport")
    from ..team.attach import route

    root = route(state.directory, state.agent)  # --agent NAME serves NAME's attached worktree
    mcp_server.serve(root, transport, host, port, default_agent=state.agent,
                     max_file_bytes=config.max_file_bytes(),
                     announce=lambda line: echo(line, err=True))  # stdout is the protocol's
