"""Every request an MCP client can make of a served workspace, one function each.

Each takes the ``Served`` workspace first (``served.py``), then the request's context and
parameters as the SDK hands them, and is a thin call into the library: what a handler may do is
the package's contract (``__init__``); the resource texts, prompts, completions and live
notifications live in their own modules. ``server.py`` wires them to the SDK's server.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from .. import progress
from ..core import paths
from ..core.workspace import Workspace
from ..errors import GitspaceError, UnknownTool
from ..tools.registry import Tool, all_tools
from . import complete, live, prompts, texts
from .served import BUG_TEXT, Served, log

if TYPE_CHECKING:
    from mcp import types
    from mcp.server.context import ServerRequestContext
    from mcp.types import CallToolResult, ToolAnnotations

REPORTS_PER_CALL = 1000  # progress and log notifications one tool call may send


# -- tools ---------------------------------------------------------------------------------

async def list_tools(served: Served, ctx: Any, params: Any) -> types.ListToolsResult:
    """tools/list: every tool of the workspace, built-ins and its own scripts."""
    from mcp import types

    served.hub.peer(ctx)  # (it will want to hear when the list changes)
    tools = await served.read_only(all_tools)
    return types.ListToolsResult(tools=[
        types.Tool(name=t.name, description=t.definition()["description"],
                   input_schema=t.args_schema, annotations=tool_annotations(t))
        for t in tools.values()
    ])

async def call_tool(served: Served, ctx: ServerRequestContext[Any, Any],
                    params: types.CallToolRequestParams) -> types.CallToolResult:
    """tools/call: one call as the client's agent, its reports forwarded as they come."""
    import anyio
    from mcp import types
    from mcp.shared.exceptions import MCPError

    hub = served.hub
    agent = served.agent_for(ctx)
    args = dict(params.arguments or {})
    send, received = anyio.create_memory_object_stream[progress.ProgressEvent](64)

    def heard(event: progress.ProgressEvent) -> None:  # (in the worker thread)
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
                outcome.append(await served.in_workspace(call, agent))
            except Exception as e:  # (raised below, outside the task group)
                outcome.append(e)

    async with anyio.create_task_group() as tg:
        tg.start_soon(forward, ctx, received, hub)
        await run()
    try:
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        result = outcome[0]
    except GitspaceError as e:  # opening the workspace failed (moved, locked...)
        return tool_result(str(e), error=True)
    except Exception:
        log.exception("tool %r failed unexpectedly", params.name)
        await hub.say("error", f"The {params.name} call failed: {BUG_TEXT}")
        return tool_result(BUG_TEXT, error=True)
    if isinstance(result.error, UnknownTool):
        # The spec's answer to a name the server does not offer (docs/mcp.md says why).
        raise MCPError(code=types.INVALID_PARAMS, message=unknown_tool(result.error.message),
                       data={"tool": params.name})
    if result.op is None:
        return tool_result(result.text, error=not result.ok)
    hub.made(result.op)
    await say(ctx, hub, "info", f"op {result.op} recorded: {params.name} by {agent}, "
               f"commit {result.commit[:12] if result.commit else '-'}")
    meta = {"gitspace": {"op": result.op, "commit": result.commit, "changed": result.changed,
                         "agent": agent}}
    return tool_result(result.text, error=not result.ok, meta=meta)

# -- resources -----------------------------------------------------------------------------

async def list_resources(served: Served, ctx: Any, params: Any) -> types.ListResourcesResult:
    from mcp import types

    served.hub.peer(ctx)
    return types.ListResourcesResult(resources=[
        types.Resource(uri=r.uri, name=r.name, mime_type="text/plain",
                       description=r.description) for r in texts.RESOURCES])

async def list_templates(served: Served, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
    from mcp import types

    return types.ListResourceTemplatesResult(resource_templates=[
        types.ResourceTemplate(uri_template=r.uri, name=r.name, mime_type="text/plain",
                               description=r.description) for r in texts.TEMPLATES])

async def read_resource(served: Served, ctx: Any,
                        params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    from mcp import types

    uri = str(params.uri)
    text = await served.read_only(lambda ws: texts.read(ws, uri), data={"uri": uri})
    return types.ReadResourceResult(contents=[
        types.TextResourceContents(uri=uri, text=text, mime_type="text/plain")])

async def subscribe(served: Served, ctx: Any,
                    params: types.SubscribeRequestParams) -> types.EmptyResult:
    from mcp import types
    from mcp.shared.exceptions import MCPError

    hub = served.hub
    uri = str(params.uri)
    problem = subscription_problem(uri)
    if problem is not None:
        raise MCPError(code=types.INVALID_PARAMS, message=problem, data={"uri": uri})
    peer = hub.peer(ctx)
    if peer is not None:
        if uri not in peer.uris and len(peer.uris) >= live.MAX_SUBSCRIPTIONS:
            raise MCPError(code=types.INVALID_PARAMS, message=too_many(), data={"uri": uri})
        peer.uris.add(uri)
    if not is_served(uri):
        await say(ctx, hub, "warning", f"gitspace serves no resource {texts.short(uri, 200)!r}:"
                   f" the subscription is kept but will never fire. The resources are "
                   f"{texts.KNOWN}.")
    return types.EmptyResult()

async def unsubscribe(served: Served, ctx: Any,
                      params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    from mcp import types

    peer = served.hub.peer(ctx)
    if peer is not None:
        peer.uris.discard(str(params.uri))
    return types.EmptyResult()

async def listen(served: Served, ctx: Any, params: types.SubscriptionsListenRequestParams) -> Any:
    """subscriptions/listen (2026): a stream of the resources' changes."""
    from mcp import types
    from mcp.shared.exceptions import MCPError

    hub = served.hub
    uris = list(params.notifications.resource_subscriptions or ())
    if len(set(uris)) > live.MAX_SUBSCRIPTIONS:
        raise MCPError(code=types.INVALID_PARAMS, message=too_many())
    for uri in uris:
        problem = subscription_problem(uri)
        if problem is not None:
            raise MCPError(code=types.INVALID_PARAMS, message=problem, data={"uri": uri})
    hub.listened.update(uris)
    try:
        return await served.listen_handler(ctx, params)
    finally:
        hub.listened.subtract(uris)

# -- prompts and completions ---------------------------------------------------------------

async def list_prompts(served: Served, ctx: Any, params: Any) -> types.ListPromptsResult:
    from mcp import types

    return types.ListPromptsResult(prompts=[
        types.Prompt(name=p.name, title=p.title, description=p.description, arguments=[
            types.PromptArgument(name=a.name, description=a.description, required=a.required)
            for a in p.arguments]) for p in prompts.PROMPTS])

async def get_prompt(served: Served, ctx: Any,
                     params: types.GetPromptRequestParams) -> types.GetPromptResult:
    from mcp import types

    args = dict(params.arguments or {})
    text = await served.read_only(lambda ws: prompts.render(ws, params.name, args))
    return types.GetPromptResult(
        description=prompts.BY_NAME[params.name].description,
        messages=[types.PromptMessage(role="user",
                                      content=types.TextContent(type="text", text=text))])

async def completion(served: Served, ctx: Any,
                     params: types.CompleteRequestParams) -> types.CompleteResult:
    from mcp import types

    ref = params.ref
    name = ref.name if isinstance(ref, types.PromptReference) else ref.uri
    context = dict(params.context.arguments or {}) if params.context else {}
    found, total = await served.read_only(lambda ws: complete.values(
        ws, ref.type, name, params.argument.name, params.argument.value, context))
    return types.CompleteResult(completion=types.Completion(
        values=found, total=total, has_more=total > len(found)))

async def set_level(served: Served, ctx: Any,
                    params: types.SetLevelRequestParams) -> types.EmptyResult:
    """logging/setLevel (2025 clients): the lowest level this connection hears."""
    from mcp import types

    peer = served.hub.peer(ctx)
    if peer is not None:
        peer.level = params.level
    return types.EmptyResult()

@asynccontextmanager
async def lifespan(served: Served, _: Any) -> AsyncIterator[dict[str, Any]]:
    """The server's life: one watch of the workspace for the live notifications."""
    import anyio

    hub = served.hub
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


def tool_annotations(tool: Tool) -> ToolAnnotations:
    from mcp.types import ToolAnnotations

    return ToolAnnotations(
        read_only_hint=not tool.mutates,
        destructive_hint=tool.destructive,
        idempotent_hint=tool.idempotent,
        open_world_hint=False,  # a tool only ever sees this workspace
    )


def too_many() -> str:
    return (f"A connection may subscribe to at most {live.MAX_SUBSCRIPTIONS:,} resources. "
            "Subscribe to a folder (gitspace://file/notes) or to gitspace://log instead of "
            "to each file.")


def unknown_tool(message: str) -> str:
    return (f"{message} List the tools again (tools/list): the workspace's own scripts come and "
            "go, and the server says so with notifications/tools/list_changed.")


def is_served(uri: str) -> bool:
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


async def say(ctx: Any, hub: live.Hub, level: str, text: str) -> None:
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


async def forward(ctx: Any, received: Any, hub: live.Hub) -> None:
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
                await say(ctx, hub, event.level, event.message)


def tool_result(text: str, *, error: bool, meta: dict[str, Any] | None = None) -> CallToolResult:
    from mcp import types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=error, _meta=meta)
