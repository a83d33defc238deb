"""The command that serves the workspace to MCP clients."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .. import config
from .common import echo, state


def mcp(
    transport: Annotated[str, typer.Option(help="stdio (the client starts gitspace) or http.")] = "stdio",
    host: Annotated[str, typer.Option(help="Address to listen on (http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on (http).")] = 8765,
    new_token: Annotated[bool, typer.Option(
        "--new-token", help="Make a bearer token, show it once, and require it (http).")] = False,
    allow_host: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Another name clients reach this server by, accepted in Host (http).")] = None,
) -> None:
    """Serve this workspace's tools, op log, checkpoints and files to MCP clients.

    Over http it listens on 127.0.0.1. Any other --host needs a bearer token: set
    GITSPACE_MCP_TOKEN, or pass --new-token to have one made and shown once."""
    from .. import http_guard, mcp_server

    if transport not in ("stdio", "http"):
        raise typer.BadParameter("use stdio or http.", param_hint="--transport")
    from ..team.attach import route

    token = http_guard.new_token() if new_token else config.mcp_token()
    root = route(state.directory, state.agent)  # --agent NAME serves NAME's attached worktree

    def announce(line: str) -> None:  # (stderr: in stdio mode stdout is the protocol's)
        echo(line, err=True)
        if new_token:
            echo(f"Bearer token (shown once; clients send 'Authorization: Bearer <token>'): "
                 f"{token}", err=True)

    mcp_server.serve(root, transport, host, port, default_agent=state.agent,
                     max_file_bytes=config.max_file_bytes(), announce=announce, token=token,
                     allow_hosts=allow_host or ())
