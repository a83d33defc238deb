"""The MCP server of one workspace: every request handler, each a thin call into the library.

What each handler may do is the package's contract (``__init__``); the resource texts, prompts,
completions and live notifications live in their own modules.
"""

from __future__ import annotations

import logging
import re
import unicodedata
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .. import __version__, api, progress
from ..core import paths
from ..core.workspace import Workspace
from ..errors import GitspaceError, UnknownTool, from_os_error
from ..storage import ledger
from ..tools.registry import Tool, all_tools
from . import complete, live, prompts, texts

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ToolAnnotations

T = TypeVar("T")

FALLBACK_AGENT = "mcp-client"
BUG_TEXT = ("gitspace failed unexpectedly (a bug) and changed nothing it had not committed; "
            "the server's log on stderr has the details.")
REPORTS_PER_CALL = 1000  # progress and log notifications one tool call may send

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


def client_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The name the client gave in clientInfo (the initialize handshake, or the 2026 envelope)."""
    client = ctx.session.client_params
    return client.client_info.name if client is not None else None


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
    import anyio
    from mcp import types
    from mcp.server.lowlevel import NotificationOptions, Server
    from mcp.server.subscriptions import ListenHandler
    from mcp.shared.exceptions import MCPError

    one_at_a_time = anyio.CapacityLimiter(1)

    async def in_workspace(fn: Callable[[Workspace], T], agent: str | None = None) -> T:
        def work() -> T:
            with api.open(base, agent=agent, max_file_bytes=max_file_bytes) as ws:
                return fn(ws)

        return await anyio.to_thread.run_sync(work, limiter=one_at_a_time)

    hub = live.Hub(base, in_workspace=in_workspace)

    async def read_only(fn: Callable[[Workspace], T], data: Any = None) -> T:
        """Run a listing, a resource read, a prompt or a completion; failures become protocol
        errors (INVALID_PARAMS with gitspace's sentence; a bug is INTERNAL_ERROR)."""
        try:
            return await in_workspace(fn)
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

    # -- tools ---------------------------------------------------------------------------------

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        hub.peer(ctx)  # (it will want to hear when the list changes)
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
        send, received = anyio.create_memory_object_stream[progress.Event](64)

        def heard(event: progress.Event) -> None:  # (in the worker thread)
            try:
                anyio.from_thread.run_sync(send.send_nowait, event)
            except anyio.WouldBlock:
                pass  # the client reads slower than the tool reports: this report is dropped

        def call(ws: Workspace) -> Any:
            with progress.listening(heard):
                return ws.call(params.name, args)

        outcome: list[Any] = []

        async def run() -> None:
            with send:
                try:
                    outcome.append(await in_workspace(call, agent))
                except Exception as e:  # (raised below, outside the task group)
                    outcome.append(e)

        async with anyio.create_task_group() as tg:
            tg.start_soon(_forward, ctx, received, hub)
            await run()
        try:
            if isinstance(outcome[0], Exception):
                raise outcome[0]
            result = outcome[0]
        except GitspaceError as e:  # opening the workspace failed (moved, locked...)
            return _tool_result(str(e), error=True)
        except Exception:
            log.exception("tool %r failed unexpectedly", params.name)
            await hub.say("error", f"The {params.name} call failed: {BUG_TEXT}")
            return _tool_result(BUG_TEXT, error=True)
        if isinstance(result.error, UnknownTool):
            # The spec's answer to a name the server does not offer (docs/mcp.md says why).
            raise MCPError(code=types.INVALID_PARAMS, message=unknown_tool(result.error.message),
                           data={"tool": params.name})
        if result.op is None:
            return _tool_result(result.text, error=not result.ok)
        hub.made(result.op)
        await _log(ctx, hub, "info", f"op {result.op} recorded: {params.name} by {agent}, "
                   f"commit {result.commit[:12] if result.commit else '-'}")
        meta = {"gitspace": {"op": result.op, "commit": result.commit, "changed": result.changed,
                             "agent": agent}}
        return _tool_result(result.text, error=not result.ok, meta=meta)

    # -- resources -----------------------------------------------------------------------------

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        hub.peer(ctx)
        return types.ListResourcesResult(resources=[
            types.Resource(uri=r.uri, name=r.name, mime_type="text/plain",
                           description=r.description) for r in texts.RESOURCES])

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=r.uri, name=r.name, mime_type="text/plain",
                                   description=r.description) for r in texts.TEMPLATES])

    async def read_resource(ctx: Any,
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        text = await read_only(lambda ws: texts.read(ws, uri), data={"uri": uri})
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, text=text, mime_type="text/plain")])

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        problem = subscription_problem(uri)
        if problem is not None:
            raise MCPError(code=types.INVALID_PARAMS, message=problem, data={"uri": uri})
        peer = hub.peer(ctx)
        if peer is not None:
            if uri not in peer.uris and len(peer.uris) >= live.MAX_SUBSCRIPTIONS:
                raise MCPError(code=types.INVALID_PARAMS, message=too_many(), data={"uri": uri})
            peer.uris.add(uri)
        if not served(uri):
            await _log(ctx, hub, "warning", f"gitspace serves no resource {texts.short(uri, 200)!r}:"
                       f" the subscription is kept but will never fire. The resources are "
                       f"{texts.KNOWN}.")
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        peer = hub.peer(ctx)
        if peer is not None:
            peer.uris.discard(str(params.uri))
        return types.EmptyResult()

    listen_handler = ListenHandler(hub.bus, max_subscriptions=64)

    async def listen(ctx: Any, params: types.SubscriptionsListenRequestParams) -> Any:
        uris = list(params.notifications.resource_subscriptions or ())
        if len(set(uris)) > live.MAX_SUBSCRIPTIONS:
            raise MCPError(code=types.INVALID_PARAMS, message=too_many())
        for uri in uris:
            problem = subscription_problem(uri)
            if problem is not None:
                raise MCPError(code=types.INVALID_PARAMS, message=problem, data={"uri": uri})
        hub.listened.update(uris)
        try:
            return await listen_handler(ctx, params)
        finally:
            hub.listened.subtract(uris)

    # -- prompts and completions ---------------------------------------------------------------

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[
            types.Prompt(name=p.name, title=p.title, description=p.description, arguments=[
                types.PromptArgument(name=a.name, description=a.description, required=a.required)
                for a in p.arguments]) for p in prompts.PROMPTS])

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        args = dict(params.arguments or {})
        text = await read_only(lambda ws: prompts.render(ws, params.name, args))
        return types.GetPromptResult(
            description=prompts.BY_NAME[params.name].description,
            messages=[types.PromptMessage(role="user",
                                          content=types.TextContent(type="text", text=text))])

    async def completion(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        name = ref.name if isinstance(ref, types.PromptReference) else ref.uri
        context = dict(params.context.arguments or {}) if params.context else {}
        found, total = await read_only(lambda ws: complete.values(
            ws, ref.type, name, params.argument.name, params.argument.value, context))
        return types.CompleteResult(completion=types.Completion(
            values=found, total=total, has_more=total > len(found)))

    async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        peer = hub.peer(ctx)
        if peer is not None:
            peer.level = params.level
        return types.EmptyResult()

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[dict[str, Any]]:
        if hub.watching:  # (an in-process client opens a lifespan per connection)
            yield {}
            return
        hub.watching = True
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(hub.watch)
                yield {}
                tg.cancel_scope.cancel()
        finally:
            hub.watching = False

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
        lifespan=lifespan,
        # gitspace's schemas declare no Mcp-Param headers: nothing to look up per call.
        get_tool_input_schema=lambda name: None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_subscriptions_listen=listen,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=completion,
    )
    # Registered by hand: the constructor's on_set_logging_level warns that 2026 drops logging,
    # and gitspace serves 2025 clients, which use it.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    return server


def too_many() -> str:
    return (f"A connection may subscribe to at most {live.MAX_SUBSCRIPTIONS:,} resources. "
            "Subscribe to a folder (gitspace://file/notes) or to gitspace://log instead of "
            "to each file.")


def unknown_tool(message: str) -> str:
    return (f"{message} List the tools again (tools/list): the workspace's own scripts come and "
            "go, and the server says so with notifications/tools/list_changed.")


def served(uri: str) -> bool:
    """Is ``uri`` one of gitspace's resources (or templates)?"""
    return uri in (texts.LOG_URI, texts.CHECKPOINTS_URI) or any(uri.startswith(p) for p in (
        texts.FILE_PREFIX, texts.OP_PREFIX, texts.CHECKPOINT_PREFIX, texts.BRANCH_PREFIX))


def subscription_problem(uri: str) -> str | None:
    """Why a subscription to ``uri`` is refused: a file path the path policy refuses."""
    if not uri.startswith(texts.FILE_PREFIX):
        return None
    from urllib.parse import unquote

    try:
        paths.normalize(unquote(uri[len(texts.FILE_PREFIX):]), allow_root=True)
    except GitspaceError as e:
        return str(e)
    return None


async def _log(ctx: Any, hub: live.Hub, level: str, text: str) -> None:
    """A log message about this request, on its own stream, if the client hears ``level``."""
    from mcp import types
    from mcp.shared.exceptions import MCPDeprecationWarning

    peer = hub.peer(ctx)
    if peer is None:  # 2026: the request itself opts in to log levels (the SDK checks)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await ctx.session.send_log_message(level, text, "gitspace",
                                               related_request_id=ctx.request_id)
        return
    if live.audible(level, peer.level):
        await ctx.session.send_notification(types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level=level,  # type: ignore[arg-type]
                                                          data=text,
                                                          logger="gitspace")),
            related_request_id=ctx.request_id)


async def _forward(ctx: Any, received: Any, hub: live.Hub) -> None:
    """Send a tool call's reports to the client: progress (always rising) and log lines."""
    last, sent = -1.0, 0
    async with received:
        async for event in received:
            if sent >= REPORTS_PER_CALL:
                continue  # drain: the tool must never wait on the client
            if event.kind == "progress" and event.done > last:
                last, sent = event.done, sent + 1
                await ctx.session.report_progress(event.done, event.total, event.message or None)
            elif event.kind == "log":
                sent += 1
                await _log(ctx, hub, event.level, event.message)


def _tool_result(text: str, *, error: bool, meta: dict[str, Any] | None = None) -> CallToolResult:
    from mcp import types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=error, _meta=meta)
