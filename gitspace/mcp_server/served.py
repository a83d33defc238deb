"""One workspace served over MCP: what every request handler (``handlers.py``) works with.

Invariants: tool calls and reads run one at a time in a worker thread, each on the workspace
opened afresh (``api.open``), so a handler never holds a workspace across requests; a read's
failure is a protocol error carrying gitspace's own sentence (``INVALID_PARAMS``), a bug an
``INTERNAL_ERROR`` that says so and logs the details on stderr.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .. import api
from ..core.workspace import Workspace
from ..errors import GitspaceError, from_os_error
from ..storage import ledger
from . import live

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

T = TypeVar("T")

FALLBACK_AGENT = "mcp-client"
BUG_TEXT = ("gitspace failed unexpectedly (a bug) and changed nothing it had not committed; "
            "the server's log on stderr has the details.")

log = logging.getLogger("gitspace.mcp")


class Served:
    """The workspace at ``base``, as every handler of its server sees it."""

    def __init__(self, base: Path, default_agent: str | None, max_file_bytes: int) -> None:
        import anyio
        from mcp.server.subscriptions import ListenHandler

        self.base, self.default_agent, self.max_file_bytes = base, default_agent, max_file_bytes
        self.one_at_a_time = anyio.CapacityLimiter(1)
        self.hub = live.Hub(base, in_workspace=self.in_workspace)
        self.listen_handler = ListenHandler(self.hub.bus, max_subscriptions=64)

    def agent_for(self, ctx: ServerRequestContext[Any, Any]) -> str:
        """The agent this request's ops are recorded under (``agent_name``)."""
        return agent_name(client_name(ctx), self.default_agent)

    async def in_workspace(self, fn: Callable[[Workspace], T], agent: str | None = None) -> T:
        """``fn`` on the workspace, opened for this call, in the one worker."""
        import anyio

        def work() -> T:
            with api.open(self.base, agent=agent, max_file_bytes=self.max_file_bytes) as ws:
                return fn(ws)

        return await anyio.to_thread.run_sync(work, limiter=self.one_at_a_time)

    async def read_only(self, fn: Callable[[Workspace], T], data: Any = None) -> T:
        """Run a listing, a resource read, a prompt or a completion; failures become protocol
        errors (INVALID_PARAMS with gitspace's sentence; a bug is INTERNAL_ERROR)."""
        from mcp import types
        from mcp.shared.exceptions import MCPError

        try:
            return await self.in_workspace(fn)
        except GitspaceError as e:
            raise MCPError(code=types.INVALID_PARAMS, message=str(e), data=data) from None
        except OSError as e:
            expected = from_os_error(e)
            if expected is None:
                log.exception("gitspace failed unexpectedly")
                raise MCPError(code=types.INTERNAL_ERROR, message=BUG_TEXT) from None
            raise MCPError(code=types.INVALID_PARAMS, message=str(expected), data=data) from None
        except Exception:
            log.exception("gitspace failed unexpectedly")
            raise MCPError(code=types.INTERNAL_ERROR, message=BUG_TEXT) from None


def agent_name(client: str | None, default: str | None = None) -> str:
    """The agent an MCP client's ops are recorded under.

    The operator's ``--agent`` (``default``) wins: it names whose worktree is served and whose ops
    undo walks back. Without it, the client's own name, made a valid ledger token (characters a
    token may not hold become '-', runs collapse, it must start with a letter or digit); a name
    with nothing usable left falls back to "mcp-client".
    """
    if default and ledger.TOKEN.fullmatch(default):
        return default
    if client:
        ascii_name = unicodedata.normalize("NFKD", client).encode("ascii", "ignore").decode()
        name = re.sub(r"[^A-Za-z0-9._:@+=/-]+", "-", ascii_name.strip())
        name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:200].rstrip("-")
        if name and ledger.TOKEN.fullmatch(name):
            return name
    return FALLBACK_AGENT


def client_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The name the client gave in clientInfo (the initialize handshake, or the 2026 envelope)."""
    client = ctx.session.client_params
    return client.client_info.name if client is not None else None
