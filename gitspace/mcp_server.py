"""The MCP front end: the tool registry and the history of one workspace, served to MCP clients.

Invariants:
- the tools are exactly the registry's (``all_tools``: built-ins, constraint scripts, plan and
  memory), listed sorted and re-read on every listing, with the descriptions and examples the tools
  carry; every call goes through ``Workspace.call``, so a mutating call is one op whose agent is the
  client's name (made a valid ledger token, else the server's default agent, else "mcp-client");
- expected failures come back as tool errors (``is_error``) or resource errors; an unexpected
  exception is logged to stderr and reported as an error result, never a crashed server;
- one gitspace call runs at a time per server, in a worker thread, on a Workspace opened for that
  call and closed after it (other processes are kept out by the workspace lock);
- in stdio mode stdout carries protocol messages only: the library never prints, logging goes to
  stderr, and the SDK points fd 1 at stderr while it serves;
- over http it listens on loopback unless a bearer token is configured, and checks Host, Origin
  and the token on every request, whatever the address (http_guard.py).

``mcp`` (and its ``anyio``/``uvicorn`` stack) is imported inside functions so that the rest of
gitspace starts without it.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import sys
import unicodedata
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from . import __version__, api, extras, http_guard
from .core import checkpoints, schema, timeline
from .core.result import Result
from .core.workspace import Workspace
from .errors import GitspaceError, from_os_error
from .storage import ledger
from .tools.registry import Tool, all_tools

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ToolAnnotations

T = TypeVar("T")

LOG_URI = "gitspace://log"
CHECKPOINTS_URI = "gitspace://checkpoints"
FILE_PREFIX = "gitspace://file/"
FILE_TEMPLATE = FILE_PREFIX + "{path}"
LOG_LIMIT = 100
FALLBACK_AGENT = "mcp-client"
BUG_TEXT = ("gitspace failed unexpectedly (a bug) and changed nothing it had not committed; "
            "the server's log on stderr has the details.")

log = logging.getLogger("gitspace.mcp")


# -- names and annotations -------------------------------------------------------------------


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


def tool_annotations(tool: Tool) -> ToolAnnotations:
    from mcp.types import ToolAnnotations

    return ToolAnnotations(
        read_only_hint=not tool.mutates,
        destructive_hint=tool.destructive,
        idempotent_hint=tool.idempotent,
        open_world_hint=False,  # a tool only ever sees this workspace
    )


# -- resource texts --------------------------------------------------------------------------


def _when(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def log_text(ws: Workspace, limit: int = LOG_LIMIT) -> str:
    """The op timeline of the current branch, newest first, one bounded line per entry."""
    entries = timeline.timeline(ws, limit)
    lines = [f"Op log of branch {ws.branch()}, newest first (at most {limit} entries):"]
    for e in entries:
        files = ", ".join(e.files[:3]) + (f" +{len(e.files) - 3}" if len(e.files) > 3 else "")
        if e.op:
            args = ledger.canonical_json(e.op.args)
            what = f"op {e.op.op_id}  agent {e.op.agent or '-'}  {e.op.tool} {_short(args, 120)}"
        else:
            what = f"commit {e.commit[:12]}  author {e.author}  {_short(e.subject, 120)}"
        marks = "".join(f"  [checkpoint {c}]" for c in e.checkpoints)
        problem = f"  [malformed: {_short(e.problem, 120)}]" if e.problem else ""
        lines.append(f"{_when(e.time)}  {what}  files: {files or '-'}{marks}{problem}")
    return "\n".join(lines)


def checkpoints_text(ws: Workspace) -> str:
    rows = checkpoints.listing(ws)
    if not rows:
        return "No checkpoints yet. The checkpoint tool saves one."
    lines = [f"{len(rows)} checkpoint(s), oldest first:"]
    lines += [f"{c.name}  commit {c.commit[:12]}  branch {c.branch}  agent {c.agent}  "
              f"{_when(c.time)}  {_short(c.message, 120)}" for c in rows]
    return "\n".join(lines)


def file_text(ws: Workspace, uri: str) -> Result:
    """What ``view`` shows for the path in a ``gitspace://file/{path}`` URI (same cap, same
    refusals). The path is percent-decoded once; paths.resolve refuses anything still encoded."""
    return ws.call("view", {"path": unquote(uri[len(FILE_PREFIX):])})


# -- the server ------------------------------------------------------------------------------


def build_server(
    root: str | Path,
    *,
    default_agent: str | None = None,
    max_file_bytes: int = 1 << 20,
) -> Server[Any]:
    """An MCP server for the workspace at ``root`` (GitspaceError now if it is not one)."""
    return _server_for(workspace_root(root), default_agent=default_agent,
                       max_file_bytes=max_file_bytes)


def _server_for(base: Path, *, default_agent: str | None, max_file_bytes: int) -> Server[Any]:
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    one_at_a_time = anyio.CapacityLimiter(1)

    async def in_workspace(fn: Callable[[Workspace], T], agent: str | None = None) -> T:
        def work() -> T:
            with api.open(base, agent=agent, max_file_bytes=max_file_bytes) as ws:
                return fn(ws)

        return await anyio.to_thread.run_sync(work, limiter=one_at_a_time)

    async def read_only(fn: Callable[[Workspace], T]) -> T:
        """Run a listing or resource read; failures become protocol errors."""
        try:
            return await in_workspace(fn)
        except GitspaceError as e:
            raise MCPError(code=types.INVALID_PARAMS, message=str(e)) from None
        except OSError as e:
            expected = from_os_error(e)
            if expected is None:
                log.exception("gitspace failed unexpectedly")
                raise MCPError(code=types.INTERNAL_ERROR, message=BUG_TEXT) from None
            raise MCPError(code=types.INVALID_PARAMS, message=str(expected)) from None
        except Exception:
            log.exception("gitspace failed unexpectedly")
            raise MCPError(code=types.INTERNAL_ERROR, message=BUG_TEXT) from None

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = await read_only(all_tools)
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.definition()["description"],
                       input_schema=t.args_schema, annotations=tool_annotations(t))
            for t in tools.values()
        ])

    async def call_tool(ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        agent = agent_name(client_name(ctx), default_agent)
        args = dict(params.arguments or {})
        try:
            result = await in_workspace(lambda ws: ws.call(params.name, args), agent)
        except GitspaceError as e:  # opening the workspace failed (moved, locked...)
            return _tool_result(str(e), error=True)
        except Exception:
            log.exception("tool %r failed unexpectedly", params.name)
            return _tool_result(BUG_TEXT, error=True)
        meta = {"gitspace": {"op": result.op, "commit": result.commit, "changed": result.changed,
                             "agent": agent}} if result.op else None
        return _tool_result(result.text, error=not result.ok, meta=meta)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=LOG_URI, name="log", mime_type="text/plain",
                           description=f"The op timeline of the current branch, newest first "
                           f"(the last {LOG_LIMIT} ops): time, op id, agent, tool, args, files."),
            types.Resource(uri=CHECKPOINTS_URI, name="checkpoints", mime_type="text/plain",
                           description="Every checkpoint: name, commit, branch, agent, time."),
        ])

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(
                uri_template=FILE_TEMPLATE, name="file", mime_type="text/plain",
                description="A workspace file with line numbers, or a folder listing, exactly as "
                "the view tool shows it (files over the view cap are refused: use view_range or "
                "the constraint tools)."),
        ])

    async def read_resource(ctx: Any,
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri == LOG_URI:
            text = await read_only(log_text)
        elif uri == CHECKPOINTS_URI:
            text = await read_only(checkpoints_text)
        elif uri.startswith(FILE_PREFIX):
            shown = await read_only(lambda ws: file_text(ws, uri))
            if not shown.ok:
                raise MCPError(code=types.INVALID_PARAMS, message=shown.text, data={"uri": uri})
            text = shown.text
        else:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"There is no gitspace resource {uri!r}. The resources are {LOG_URI}, "
                f"{CHECKPOINTS_URI} and {FILE_TEMPLATE}.",
                data={"uri": uri},
            )
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, text=text, mime_type="text/plain")])

    return Server(
        "gitspace",
        version=__version__,
        instructions=f"Tools and history of the gitspace workspace {base}. Every change a tool "
        "makes is one git commit; checkpoint before risky steps, undo reverts.",
        # gitspace's schemas declare no Mcp-Param headers: nothing to look up per call.
        get_tool_input_schema=lambda name: None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def workspace_root(path: str | Path) -> Path:
    """The root of the workspace at ``path``: a GitspaceError now rather than on first use."""
    with api.open(path) as ws:
        return ws.root


def client_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The name the client gave in clientInfo (the initialize handshake, or the 2026 envelope)."""
    client = ctx.session.client_params
    return client.client_info.name if client is not None else None


def _tool_result(text: str, *, error: bool, meta: dict[str, Any] | None = None) -> CallToolResult:
    from mcp import types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=error, _meta=meta)


def serve(
    root: str | Path,
    transport: str = "stdio",
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

    if transport not in ("stdio", "http"):
        raise GitspaceError(f"Unknown MCP transport {transport!r}.", hint="Use stdio or http.")
    if transport == "http":
        http_guard.check_bind(host, token, "MCP over HTTP")
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="gitspace mcp: %(levelname)s %(name)s: %(message)s")
    base = workspace_root(root)
    server = _server_for(base, default_agent=default_agent, max_file_bytes=max_file_bytes)
    if transport == "stdio":
        anyio.run(_stdio, server)
        return
    names = http_guard.server_names(host, allow_hosts)
    if announce:
        shown = http_guard.LOOPBACK_NAMES[0] if host in http_guard.WILDCARDS else host
        announce(f"Serving the gitspace workspace {base} over MCP at http://{shown}:{port}/mcp"
                 f"{' (bearer token required)' if token else ''} (Ctrl-C stops).")
    anyio.run(functools.partial(_http, server, host, port, names, token))


async def _stdio(server: Server[Any]) -> None:
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


async def _http(server: Server[Any], host: str, port: int, names: frozenset[str],
                token: str | None) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    # The SDK's own Host/Origin check, given the same names, backs up the guard around it.
    hosts = [f"{name}:{port}" for name in sorted(names)]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts,
        allowed_origins=[f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")])
    app = server.streamable_http_app(host=host, transport_security=security)
    guarded = http_guard.Guard(app, names, port, token)
    config = uvicorn.Config(guarded, host=host, port=port, log_level="warning")
    await uvicorn.Server(config).serve()
