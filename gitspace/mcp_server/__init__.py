"""The MCP front end: the tool registry and the history of one workspace, served to MCP clients.

Invariants:
- the tools are exactly the registry's (``all_tools``: built-ins, constraint scripts, plan and
  memory), listed sorted and re-read on every listing, with the descriptions and examples the tools
  carry; every call goes through ``Workspace.call``, so a mutating call is one op whose agent is the
  client's name (made a valid ledger token, else the server's default agent, else "mcp-client");
- expected failures come back as tool errors (``is_error``) or, for what is not a tool call's own
  failure (a tool the server does not offer, a resource or prompt that does not exist, a bad
  argument to them), as protocol errors with gitspace's sentence; an unexpected exception is logged
  to stderr and reported as an error, never a crashed server;
- one gitspace call runs at a time per server, in a worker thread, on a Workspace opened for that
  call and closed after it (other processes are kept out by the workspace lock); resources,
  prompts and completions only read;
- a call that reports progress (gitspace/progress.py) sends it to the client as it happens, always
  rising, bounded per call; ops landing from any process are noticed and announced (live.py);
- in stdio mode stdout carries protocol messages only: the library never prints, logging goes to
  stderr, and the SDK points fd 1 at stderr while it serves;
- over http it listens on loopback unless a bearer token is configured, and checks Host, Origin
  and the token on every request, whatever the address (http_guard.py).

``mcp`` (and its ``anyio``/``uvicorn`` stack) is imported inside functions so that the rest of
gitspace starts without it. The modules: ``server`` (the handlers), ``texts`` (resources),
``prompts``, ``complete``, ``live`` (subscriptions and log messages), ``transport`` (stdio, HTTP).
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import extras, http_guard
from ..errors import GitspaceError
from . import transport
from .handlers import tool_annotations
from .served import agent_name, client_name
from .server import build_server, server_for, workspace_root

__all__ = ["agent_name", "build_server", "client_name", "serve", "tool_annotations",
           "workspace_root"]


def serve(
    root: str | Path,
    transport_name: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    default_agent: str | None = None,
    max_file_bytes: int = 1 << 20,
    announce: Callable[[str], None] | None = None,
    token: str | None = None,
    allow_hosts: Sequence[str] = (),
) -> None:
    """Serve the workspace until the client hangs up (stdio) or the process is stopped (http).

    Over http, a non-loopback ``host`` is refused unless ``token`` is set; every request must
    name this server in Host (and Origin, if any) and, with a token, carry it (http_guard).
    ``announce`` receives one line saying where an http server listens; nothing else is said.
    """
    extras.require("mcp")
    import anyio

    if transport_name not in ("stdio", "http"):
        raise GitspaceError(f"Unknown MCP transport {transport_name!r}.", hint="Use stdio or http.")
    if transport_name == "http":
        http_guard.check_bind(host, token, "MCP over HTTP")
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="gitspace mcp: %(levelname)s %(name)s: %(message)s")
    base = workspace_root(root)
    server = server_for(base, default_agent=default_agent, max_file_bytes=max_file_bytes)
    if transport_name == "stdio":
        anyio.run(transport.stdio, server)
        return
    names = http_guard.server_names(host, allow_hosts)
    if announce:
        shown = http_guard.LOOPBACK_NAMES[0] if host in http_guard.WILDCARDS else host
        announce(f"Serving the gitspace workspace {base} over MCP at http://{shown}:{port}/mcp"
                 f"{' (bearer token required)' if token else ''} (Ctrl-C stops).")
    anyio.run(functools.partial(transport.http, server, host, port, names, token))
