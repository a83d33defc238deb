"""MCP beyond tools, through the official Python client over stdio and streamable HTTP:
subscriptions that hear an op whoever made it, progress, completions, 2020-12 schemas, prompts,
log messages, resource templates and the SSE priming event.

No timing is asserted: a wait for a notification is bounded (anyio.fail_after) only so that a
broken server fails the test instead of hanging it.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import REPO, write_script
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import (
    Implementation,
    LoggingMessageNotification,
    PromptReference,
    ResourceTemplateReference,
    ResourceUpdatedNotification,
    TextResourceContents,
    ToolListChangedNotification,
)
from mcp_http import clean_env, http_server

import gitspace
from gitspace.mcp_server import build_server

sys.path.insert(0, str(REPO / "benchmarks"))
import gen_worklog  # noqa: E402

# resources/subscribe and logging/setLevel are the 2025 protocol's; the SDK warns that 2026 drops
# them, and 2025 clients (Claude Code, the conformance suite) are what these tests play.
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

WAIT = 30  # seconds a notification may take on a loaded machine before the test gives up


def cli(root: Path, *args: str) -> str:
    """The gitspace CLI, as a person runs it beside the server."""
    out = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), *args],
                         capture_output=True, text=True, env=clean_env(), timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


@asynccontextmanager
async def connected(server: Any, *, mode: str = "auto", handler: Any = None,
                    name: str = "live tester") -> AsyncIterator[Client]:
    async with Client(server, client_info=Implementation(name=name, version="1"), mode=mode,
                      message_handler=handler) as client:
        yield client


def stdio(root: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "gitspace", "-C", str(root),
                                                               "mcp"], env=clean_env())


def over(transport: str, root: Path, tmp_path: Path, body: Callable[[Any], Awaitable[None]]) -> None:
    """Run ``body(server)`` against a real server process on ``transport``."""
    if transport == "stdio":
        anyio.run(body, stdio(root))
        return
    with http_server(root, tmp_path) as served:
        anyio.run(body, served.url)
    assert served.returncode == 130 and "Traceback" not in served.stderr, served.stderr


async def text_of(client: Client, uri: str) -> str:
    contents = (await client.read_resource(uri)).contents[0]
    assert isinstance(contents, TextResourceContents)
    return contents.text


def quietly_subscribe(client: Client, uri: str, *, unsubscribe: bool = False) -> Awaitable[Any]:
    return (client.unsubscribe_resource if unsubscribe else client.subscribe_resource)(uri)


# -- subscriptions hear an op made by the CLI --------------------------------------------------

LOG, A, B, CHECKPOINTS = ("gitspace://log", "gitspace://file/notes/a.md",
                          "gitspace://file/notes/b.md", "gitspace://checkpoints")


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])  # 2025: resources/subscribe; 2026: listen
def test_a_subscription_sees_an_op_made_by_the_cli(ws_root: Path, tmp_path: Path,
                                                   transport: str, mode: str) -> None:
    gitspace.init(ws_root).close()
    heard: list[str] = []

    async def handler(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            heard.append(str(message.params.uri))

    async def until(uri: str, count: int = 1) -> None:
        with anyio.fail_after(WAIT):
            while heard.count(uri) < count:
                await anyio.sleep(0.02)

    async def ops_by_the_cli() -> None:
        await anyio.to_thread.run_sync(cli, ws_root, "call", "create", "--args",
                                       '{"path": "notes/a.md", "file_text": "one\\n"}')
        await until(A)
        await until(LOG)
        await anyio.to_thread.run_sync(cli, ws_root, "call", "create", "--args",
                                       '{"path": "notes/b.md", "file_text": "two\\n"}')
        await until(B)
        assert heard.count(A) == 1  # an op on b.md does not touch a.md (a's would come first)
        assert CHECKPOINTS not in heard
        await anyio.to_thread.run_sync(cli, ws_root, "checkpoint", "saved")
        await until(CHECKPOINTS)

    async def body(server: Any) -> None:
        async with connected(server, mode=mode, handler=handler) as client:
            if mode == "legacy":
                for uri in (LOG, A, B, CHECKPOINTS):
                    await quietly_subscribe(client, uri)
                await ops_by_the_cli()
                return
            async with client.listen(resource_subscriptions=[LOG, A, B, CHECKPOINTS]) as events:
                async def drain() -> None:  # (each event also reaches the message handler)
                    async for event in events:
                        assert event.uri in (LOG, A, B, CHECKPOINTS)  # type: ignore[union-attr]

                async with anyio.create_task_group() as tg:
                    tg.start_soon(drain)
                    await ops_by_the_cli()
                    tg.cancel_scope.cancel()

    over(transport, ws_root, tmp_path, body)
    assert "saved" in cli(ws_root, "checkpoints")


# -- progress, completions and a 2020-12 schema, over each transport ----------------------------

ADDRESS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"},
                                                           "city": {"type": "string"}},
                          "required": ["city"], "additionalProperties": False}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "required": ["name"], "additionalProperties": False}


def address_script(root: Path) -> None:
    folder = root / "constraints"
    folder.mkdir(exist_ok=True)
    (folder / "ship").write_text(
        "#!/bin/sh\n# ---gitspace---\n# name: ship\n# description: Echo a shipping label.\n"
        '# example: {"name": "Ada", "address": {"city": "Paris"}}\n# mutates: false\n'
        f"# args: {json.dumps(ADDRESS_SCHEMA)}\n# ---\ncat\n")
    (folder / "ship").chmod(0o755)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_progress_completions_and_a_2020_12_schema(ws_root: Path, tmp_path: Path,
                                                   transport: str) -> None:
    with gitspace.init(ws_root) as ws:
        assert gen_worklog.write(ws_root / "journal.jsonl", entries=60_000) == 60_000
        assert ws.call("create", {"path": "notes/plan.md", "file_text": "x\n"}).ok
        assert ws.call("checkpoint", {"name": "before-risk"}).ok
        assert ws.call("checkpoint", {"name": "baseline"}).ok
        assert ws.call("branch", {"name": "experiment"}).ok
    address_script(ws_root)
    size = (ws_root / "journal.jsonl").stat().st_size
    steps: list[tuple[float, float | None, str | None]] = []

    async def progressed(done: float, total: float | None, message: str | None) -> None:
        steps.append((done, total, message))

    async def body(server: Any) -> None:
        async with connected(server) as client:
            split = await client.call_tool("split_worklog", {"path": "journal.jsonl"},
                                           progress_callback=progressed)
            assert not split.is_error, split.content
            # Completions: checkpoints, branches, paths, op ids.
            review = PromptReference(type="ref/prompt", name="review_since_checkpoint")
            got = await client.complete(review, {"name": "checkpoint", "value": "be"})
            assert got.completion.values == ["before-risk"]
            named = ResourceTemplateReference(type="ref/resource", uri="gitspace://checkpoint/{name}")
            got = await client.complete(named, {"name": "name", "value": ""})
            assert sorted(got.completion.values) == ["baseline", "before-risk"]  # newest first
            branch = ResourceTemplateReference(type="ref/resource", uri="gitspace://branch/{name}")
            assert (await client.complete(branch, {"name": "name", "value": "ex"})
                    ).completion.values == ["experiment"]
            file = ResourceTemplateReference(type="ref/resource", uri="gitspace://file/{path}")
            assert (await client.complete(file, {"name": "path", "value": "notes/p"})
                    ).completion.values == ["notes/plan.md"]
            assert "journal/" in (await client.complete(file, {"name": "path", "value": ""})
                                  ).completion.values
            op = ResourceTemplateReference(type="ref/resource", uri="gitspace://op/{op}")
            ids = (await client.complete(op, {"name": "op", "value": ""})).completion.values
            assert len(ids) == 3 and all(len(i) == 26 for i in ids)  # split, create, init
            nothing = PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
            assert (await client.complete(nothing, {"name": "arg1", "value": "x"})
                    ).completion.values == []
            # A 2020-12 schema reaches the client as written, validates and refuses.
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert listed["ship"].input_schema == ADDRESS_SCHEMA
            good = await client.call_tool("ship", {"name": "Ada", "address": {"city": "Paris"}})
            assert not good.is_error and json.loads(good.content[0].text)["address"] == {  # type: ignore[union-attr]
                "city": "Paris"}
            bad = await client.call_tool("ship", {"name": "Ada", "address": {"street": "Rue"}})
            assert bad.is_error and "args.address.city is required but was not given" in \
                bad.content[0].text  # type: ignore[union-attr]
            extra = await client.call_tool("ship", {"name": "Ada", "address": {"city": "P", "zip": 1}})
            assert extra.is_error and "args.address has unknown field 'zip'" in \
                extra.content[0].text  # type: ignore[union-attr]

    over(transport, ws_root, tmp_path, body)
    assert 10 <= len(steps) <= 21, steps
    assert [s[0] for s in steps] == sorted({s[0] for s in steps})  # rising, never repeated
    assert steps[-1][:2] == (size, size)
    assert steps[0][2] == "bytes of journal.jsonl copied into segments"


# -- in process: prompts, log messages, the tool list, resources ---------------------------------


def run(server: Any, body: Callable[[Client], Awaitable[None]], *, mode: str = "legacy",
        handler: Any = None) -> None:
    async def main() -> None:
        async with connected(server, mode=mode, handler=handler, name="in process") as client:
            await body(client)

    anyio.run(main)


def test_prompts_are_listed_and_filled_in(ws_root: Path) -> None:
    with gitspace.init(ws_root) as ws:
        assert ws.call("create", {"path": "notes/a.md", "file_text": "a\n"}).ok
        assert ws.call("checkpoint", {"name": "start"}).ok
        assert ws.call("append", {"path": "notes/a.md", "text": "b\n"}).ok
        op = ws.call("append", {"path": "notes/a.md", "text": "c\n"}).op
        (ws_root / "big.jsonl").write_text("{}\n")

    async def body(client: Client) -> None:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(listed) == {"inspect_workspace", "read_big_log", "review_since_checkpoint"}
        assert all(p.description for p in listed.values())
        assert [(a.name, a.required) for a in listed["review_since_checkpoint"].arguments or []] == [
            ("checkpoint", True)]
        review = await client.get_prompt("review_since_checkpoint", {"checkpoint": "start"})
        shown = review.messages[0].content.text  # type: ignore[union-attr]
        assert "2 op(s), newest first" in shown and shown.index(str(op)) < shown.index("append")
        assert '"name": "start"' in shown  # how to go back
        inspect = await client.get_prompt("inspect_workspace", {"goal": "tidy the notes"})
        text = inspect.messages[0].content.text  # type: ignore[union-attr]
        assert "tidy the notes" in text and "notes/" in text and "Checkpoints: start" in text
        big = await client.get_prompt("read_big_log", {"path": "big.jsonl"})
        assert 'peek with {"path": "big.jsonl"}' in big.messages[0].content.text  # type: ignore[union-attr]
        for name, args, said in [
            ("review_since_checkpoint", {"checkpoint": "nope"}, "no checkpoint named 'nope'"),
            ("review_since_checkpoint", {}, "needs the argument 'checkpoint'"),
            ("read_big_log", {"path": "../etc/passwd"}, "refused"),
            ("read_big_log", {"path": "missing.jsonl"}, "does not exist"),
            ("inspect_workspace", {"colour": "red"}, "takes no argument 'colour'"),
            ("test_simple_prompt", {}, "no prompt named 'test_simple_prompt'"),
        ]:
            with pytest.raises(MCPError) as caught:
                await client.get_prompt(name, args)
            assert said in caught.value.error.message, caught.value.error.message

    run(build_server(ws_root), body)


def test_log_messages_follow_the_level_the_client_sets(ws_root: Path) -> None:
    gitspace.init(ws_root).close()
    logged: list[tuple[str, str]] = []

    async def handler(message: Any) -> None:
        if isinstance(message, LoggingMessageNotification):
            logged.append((message.params.level, str(message.params.data)))

    async def body(client: Client) -> None:
        await client.set_logging_level("warning")
        assert not (await client.call_tool("create", {"path": "a.md", "file_text": "a"})).is_error
        assert logged == []  # an op is info: below warning
        await client.set_logging_level("info")
        created = await client.call_tool("create", {"path": "b.md", "file_text": "b"})
        assert created.meta
        assert logged == [("info", f"op {created.meta['gitspace']['op']} recorded: create by "
                           f"in-process, commit {created.meta['gitspace']['commit'][:12]}")]
        await quietly_subscribe(client, "test://watched-resource")  # honored, with a warning
        assert logged[-1][0] == "warning" and "never fire" in logged[-1][1]
        with pytest.raises(MCPError) as caught:
            await quietly_subscribe(client, "gitspace://file/..%2F..%2Fetc%2Fpasswd")
        assert "refused" in caught.value.error.message  # a path the path policy refuses

    run(build_server(ws_root), body, handler=handler)


def test_adding_a_script_changes_the_tool_list_and_a_bad_one_is_a_warning(ws_root: Path) -> None:
    gitspace.init(ws_root).close()
    seen: list[Any] = []

    async def handler(message: Any) -> None:
        if isinstance(message, ToolListChangedNotification | LoggingMessageNotification):
            seen.append(message)

    async def until(found: Callable[[], bool]) -> None:
        with anyio.fail_after(WAIT):
            while not found():
                await anyio.sleep(0.02)

    async def body(client: Client) -> None:
        assert client.server_capabilities.tools and client.server_capabilities.tools.list_changed
        assert "late" not in {t.name for t in (await client.list_tools()).tools}
        write_script(ws_root / "constraints", "late", False, "echo late\n")
        await until(lambda: any(isinstance(m, ToolListChangedNotification) for m in seen))
        assert "late" in {t.name for t in (await client.list_tools()).tools}
        (ws_root / "constraints" / "broken").write_text("#!/bin/sh\n# ---gitspace---\n"
                                                        "# name: broken\n# ---\n")
        await until(lambda: any(isinstance(m, LoggingMessageNotification) for m in seen))
        warning = next(m for m in seen if isinstance(m, LoggingMessageNotification))
        assert warning.params.level == "warning" and "constraints/broken" in str(warning.params.data)

    run(build_server(ws_root), body, handler=handler)


def test_templates_read_an_op_a_file_at_an_op_a_checkpoint_and_a_branch(ws_root: Path) -> None:
    with gitspace.init(ws_root) as ws:
        first = ws.call("create", {"path": "notes/a.md", "file_text": "one\n"}).op
        assert ws.call("checkpoint", {"name": "v1", "message": "first draft"}).ok
        assert ws.call("str_replace", {"path": "notes/a.md", "old_str": "one", "new_str": "two"}).ok
        assert ws.call("branch", {"name": "side"}).ok
    assert first is not None

    async def body(client: Client) -> None:
        op = await text_of(client, f"gitspace://op/{first}")
        assert f"op {first}" in op and "tool: create" in op and "files changed (1): notes/a.md" in op
        assert f"op {first}" in await text_of(client, f"gitspace://op/{first[-8:]}")  # its short id
        old = await text_of(client, f"gitspace://op/{first}/file/notes/a.md")
        assert old.endswith("     1\tone")  # as it was then, not "two"
        cp = await text_of(client, "gitspace://checkpoint/v1")
        assert f"at: op {first}" in cp and "first draft" in cp
        assert "str_replace" in await text_of(client, "gitspace://branch/side")
        for uri, said in [
            ("gitspace://op/01ZZZZZZZZZZZZZZZZZZZZZZZZ", "no op"),
            (f"gitspace://op/{first}/file/notes/b.md", "was not a file"),
            (f"gitspace://op/{first}/file/..%2Fx", "refused"),
            ("gitspace://checkpoint/v9", "no checkpoint named 'v9'"),
            ("gitspace://branch/nope", "no branch named 'nope'"),
            ("test://static-text", "no gitspace resource"),
        ]:
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            assert said in caught.value.error.message, (uri, caught.value.error.message)

    run(build_server(ws_root), body)
    run(build_server(ws_root), body, mode="auto")


# -- HTTP: POST streams open with a priming event and a retry field ------------------------------


def test_post_streams_open_with_a_priming_event_and_retry(ws_root: Path, tmp_path: Path) -> None:
    gitspace.init(ws_root).close()
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-11-25"}

    def post(port: int, message: dict[str, Any], extra: dict[str, str]) -> tuple[Any, str]:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
        connection.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", **message}),
                           {**headers, **extra})
        response = connection.getresponse()
        body = response.read().decode()
        connection.close()
        return response, body

    with http_server(ws_root, tmp_path) as served:
        port = int(served.url.rsplit(":", 1)[1].split("/")[0])
        init, _ = post(port, {"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}, {})
        session = {"Mcp-Session-Id": init.headers["mcp-session-id"]}
        post(port, {"method": "notifications/initialized"}, session)
        listed, body = post(port, {"id": 2, "method": "tools/list"}, session)
    assert listed.headers["content-type"].startswith("text/event-stream")
    events = body.replace("\r\n", "\n").split("\n\n")
    first = dict(line.split(": ", 1) if ": " in line else (line.rstrip(":"), "")
                 for line in events[0].splitlines())
    assert first["id"] and first["retry"] == "2000" and first.get("data", "") == ""
    assert '"id":2' in events[1].replace(" ", "")  # then the answer, on the same stream


# -- what a hostile client or script cannot do --------------------------------------------------


def test_a_script_flooding_progress_cannot_flood_the_client(ws_root: Path) -> None:
    gitspace.init(ws_root).close()
    folder = ws_root / "constraints"
    folder.mkdir()
    (folder / "chatty.py").write_text(
        "# ---gitspace---\n# name: chatty\n# description: Reports far too often.\n"
        '# example: {}\n# mutates: false\n# args: {"type": "object"}\n# ---\n'
        "import sys\nfor n in range(20_000):\n"
        "    sys.stderr.write(f'gitspace:progress {n % 5000}/5000 again\\n')\n"
        "sys.stderr.flush()\nprint('done')\n")
    steps: list[float] = []

    async def progressed(done: float, total: float | None, message: str | None) -> None:
        steps.append(done)

    async def body(client: Client) -> None:
        result = await client.call_tool("chatty", {}, progress_callback=progressed)
        assert not result.is_error and result.content[0].text == "done\n"  # type: ignore[union-attr]

    run(build_server(ws_root), body)
    assert 0 < len(steps) <= 1000 and steps == sorted(set(steps))  # bounded, and always rising


def test_subscriptions_per_connection_are_bounded(ws_root: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from gitspace.mcp_server import live

    gitspace.init(ws_root).close()
    monkeypatch.setattr(live, "MAX_SUBSCRIPTIONS", 3)

    async def body(client: Client) -> None:
        for name in ("a", "b", "c", "a"):  # (the same one twice counts once)
            await quietly_subscribe(client, f"gitspace://file/{name}.md")
        with pytest.raises(MCPError) as caught:
            await quietly_subscribe(client, "gitspace://file/d.md")
        assert "at most 3 resources" in caught.value.error.message
        await quietly_subscribe(client, "gitspace://file/a.md", unsubscribe=True)
        await quietly_subscribe(client, "gitspace://file/d.md")

    run(build_server(ws_root), body)
