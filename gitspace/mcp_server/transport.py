"""Serving one MCP server over stdio or streamable HTTP.

Invariants:
- in stdio mode stdout carries protocol messages only (the SDK points fd 1 at stderr while it
  serves), and a request line the SDK could not read is answered with an error naming why,
  instead of leaving the client waiting;
- over HTTP every request passes http_guard (Host, Origin, token) and the SDK's own check; every
  POST stream opens with a priming event (an id, empty data) and a ``retry`` field, so a client
  whose stream drops can resume it with ``Last-Event-ID``: the events are kept in memory, at most
  EVENTS_KEPT of them (the oldest go first), for as long as the server runs.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from .. import http_guard
from ..core import schema

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

EVENTS_KEPT = 1000
RETRY_MS = 2000  # how long a client whose stream dropped waits before it reconnects


async def stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(_Answering(read, write), write, server.create_initialization_options())


class _Answering:
    """The read side of the stdio transport, answering the requests the SDK could not read.

    The SDK drops a line it cannot parse (a lone UTF-16 surrogate, JSON nested past its
    recursion limit) without a reply, and the client would wait forever; when the line names its
    request id, this answers it with a JSON-RPC error saying why."""

    def __init__(self, inner: Any, write: Any) -> None:
        self.inner, self.write = inner, write

    async def receive(self) -> Any:
        while True:
            item = await self.inner.receive()
            reply = unreadable_reply(item) if isinstance(item, Exception) else None
            if reply is None:
                return item
            await self.write.send(reply)

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _Answering:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return bool(await self.inner.__aexit__(*exc))


_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def unreadable_reply(error: Exception) -> Any:
    """A JSON-RPC error answering a request line the SDK could not parse, or None (not a parse
    error, or a line without an id to answer)."""
    from mcp.shared.message import SessionMessage
    from mcp.types import INVALID_PARAMS, ErrorData, JSONRPCError

    try:
        first = error.errors()[0]  # type: ignore[attr-defined]
    except (AttributeError, IndexError, TypeError):
        return None
    line = first.get("input")
    if first.get("type") != "json_invalid" or not isinstance(line, str):
        return None
    try:
        data = json.loads(line)
        found = data.get("id") if isinstance(data, dict) else None
        why = schema.unreadable(data.get("params"), "params") if isinstance(data, dict) else None
    except RecursionError:
        match = _ID.search(line[:line.find('"params"')] if '"params"' in line else line[:200])
        found = json.loads(match.group(1)) if match else None
        why = f"it nests more than {schema.MAX_DEPTH} levels deep"
    except ValueError:
        return None  # not JSON at all: there is no id to answer
    if not isinstance(found, int | str) or isinstance(found, bool):
        return None
    why = (why or "it is not JSON the server can read").rstrip(".")
    text = (f"gitspace could not read this request: {why}. Hint: send arguments as plain JSON "
            "text: valid Unicode, a few levels deep.")
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=found,
                                       error=ErrorData(code=INVALID_PARAMS, message=text)))


def event_store() -> Any:
    """A bounded, in-memory store of the events sent on SSE streams, for resumption."""
    from mcp.server.streamable_http import EventMessage, EventStore

    class Kept(EventStore):
        def __init__(self) -> None:
            self.events: OrderedDict[str, tuple[str, Any]] = OrderedDict()
            self.ids = itertools.count(1)

        async def store_event(self, stream_id: str, message: Any) -> str:
            event_id = f"{next(self.ids)}"
            self.events[event_id] = (stream_id, message)
            while len(self.events) > EVENTS_KEPT:
                self.events.popitem(last=False)
            return event_id

        async def replay_events_after(self, last_event_id: str, send_callback: Any) -> str | None:
            if last_event_id not in self.events:
                return None  # unknown, or too old: nothing can be resumed
            stream = self.events[last_event_id][0]
            after = False
            for event_id, (stream_id, message) in list(self.events.items()):
                if after and stream_id == stream and message is not None:
                    await send_callback(EventMessage(message, event_id))
                after = after or event_id == last_event_id
            return stream

    return Kept()


async def http(server: Server[Any], host: str, port: int, names: frozenset[str],
               token: str | None) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    # The SDK's own Host/Origin check, given the same names, backs up the guard around it.
    hosts = [f"{name}:{port}" for name in sorted(names)]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts,
        allowed_origins=[f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")])
    app = server.streamable_http_app(host=host, transport_security=security,
                                     event_store=event_store(), retry_interval=RETRY_MS)
    guarded = http_guard.Guard(app, names, port, token)
    config = uvicorn.Config(guarded, host=host, port=port, log_level="warning")
    await uvicorn.Server(config).serve()
