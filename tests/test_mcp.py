"""The MCP front end through the SDK's own client: in-process, over stdio, over streamable HTTP.

Every mutating call must be one op whose agent is the client's name, as ``gitspace log`` and plain
``git log`` read it; expected failures are tool errors and the server keeps serving.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from conftest import assert_clean, ops, write_script
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, Implementation, TextResourceContents

import gitspace
from gitspace.mcp_server import agent_name, build_server
from gitspace.tools import builtins
from gitspace.tools.registry import Tool, all_tools
from gitspace.tools.text import VIEW_CAP


def clean_env() -> dict[str, str]:
    """What a server subprocess gets: no GIT_*, no API keys, the test's empty HOME."""
    return {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "LANG": "C.UTF-8",
            "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
            "GITSPACE_PACK_THRESHOLD": "0"}


def gitspace_log(root: Path) -> list[dict[str, Any]]:
    out = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), "log", "--json"],
                         capture_output=True, text=True, env=clean_env(), timeout=60)
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout))


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert block.type == "text"
    return block.text


def with_client(server: Any, name: str, body: Callable[[Client], Awaitable[None]], *,
                mode: str = "auto") -> None:
    async def main() -> None:
        async with Client(server, client_info=Implementation(name=name, version="1.0"),
                          mode=mode) as client:
            await body(client)

    anyio.run(main)


async def read(client: Client, uri: str) -> str:
    """A text resource's text."""
    contents = (await client.read_resource(uri)).contents[0]
    assert isinstance(contents, TextResourceContents) and contents.mime_type == "text/plain"
    return contents.text



# -- names -----------------------------------------------------------------------------------


def test_client_names_become_ledger_tokens() -> None:
    assert agent_name("claude-code") == "claude-code"
    assert agent_name("Claude Desktop") == "Claude-Desktop"
    assert agent_name("  -my  client!! v2 ") == "my-client-v2"
    assert agent_name("été") == "ete"
    assert agent_name("x" * 300) == "x" * 200
    assert agent_name("日本語") == "mcp-client"
    assert agent_name("", "from-flag") == "from-flag"
    assert agent_name("claude-code", "from-flag") == "from-flag"
    assert agent_name(None, "bad name") == "mcp-client"
    assert agent_name(None) == "mcp-client"


# -- in process ------------------------------------------------------------------------------


def test_tools_are_the_registry_sorted_with_annotations(ws: gitspace.Workspace) -> None:
    server = build_server(ws.root)
    expected = all_tools(ws)
    listed: dict[str, Any] = {}

    async def body(client: Client) -> None:
        listed.update({t.name: t for t in (await client.list_tools()).tools})
        write_script(ws.root / "constraints", "late", False, "echo late\n")
        listed["after"] = [t.name for t in (await client.list_tools()).tools]

    with_client(server, "lister", body)
    after = listed.pop("after")
    assert list(listed) == sorted(expected) and "late" not in listed  # sorted, the registry's
    assert "late" in after and after == sorted(after)  # scripts are re-read on every listing
    assert {"view", "create", "peek", "plan_add", "plan_show", "memory", "undo"} <= set(listed)
    for name, tool in expected.items():
        mcp_tool = listed[name]
        assert mcp_tool.description == tool.definition()["description"]
        assert "Example: " in mcp_tool.description
        assert mcp_tool.input_schema == tool.args_schema
        assert mcp_tool.annotations.read_only_hint is (not tool.mutates)
        assert mcp_tool.annotations.destructive_hint is tool.destructive
        assert mcp_tool.annotations.open_world_hint is False
    hints = {n: listed[n].annotations for n in ("view", "peek", "delete", "create", "append")}
    assert hints["view"].idempotent_hint and hints["peek"].idempotent_hint
    assert hints["delete"].destructive_hint and not hints["delete"].read_only_hint
    assert hints["create"].idempotent_hint and not hints["append"].idempotent_hint
    assert listed["memory"].input_schema["properties"]["command"]["enum"][0] == "view"


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # the 2026 envelope and the handshake
def test_calls_are_ops_of_the_client_and_errors_are_tool_errors(ws_root: Path, mode: str) -> None:
    gitspace.init(ws_root).close()
    server = build_server(ws_root)
    seen: dict[str, Any] = {}

    async def body(client: Client) -> None:
        created = await client.call_tool("create", {"path": "notes/a.md", "file_text": "one\n"})
        assert not created.is_error, text(created)
        assert created.meta and created.meta["gitspace"]["agent"] == "Test-Client"
        seen["op"] = created.meta["gitspace"]["op"]
        shown = await client.call_tool("view", {"path": "notes/a.md"})
        assert not shown.is_error and "     1\tone" in text(shown)
        seen["ops_after_view"] = len(ops(ws_root))
        missing = await client.call_tool("str_replace",
                                         {"path": "notes/a.md", "old_str": "two", "new_str": "2"})
        assert missing.is_error and "did not appear verbatim" in text(missing)
        bad = await client.call_tool("create", {"path": "notes/b.md"})
        assert bad.is_error and "file_text" in text(bad)
        with pytest.raises(MCPError) as unknown:  # the spec's protocol error (docs/mcp.md: why)
            await client.call_tool("teleport", {})
        assert unknown.value.error.code == -32602
        assert "no tool named 'teleport'" in unknown.value.error.message
        assert "List the tools again" in unknown.value.error.message
        escape = await client.call_tool("create", {"path": "../out.md", "file_text": "x"})
        assert escape.is_error and "refused" in text(escape)
        again = await client.call_tool("append", {"path": "notes/a.md", "text": "two\n"})
        assert not again.is_error, text(again)  # still serving after the errors

    with_client(server, "Test Client", body, mode=mode)
    recorded = ops(ws_root)
    assert [(op.tool, op.agent) for op in recorded] == [
        ("init", None), ("create", "Test-Client"), ("append", "Test-Client")]
    assert recorded[1].op_id == seen["op"] and seen["ops_after_view"] == 2
    assert recorded[1].args == {"path": "notes/a.md", "file_text": "one\n"}
    assert (ws_root / "notes" / "a.md").read_text() == "one\ntwo\n"
    assert not (ws_root / "notes" / "b.md").exists() and not (ws_root.parent / "out.md").exists()
    assert_clean(ws_root)


def test_plan_and_memory_tools_are_ops_too(ws_root: Path) -> None:
    gitspace.init(ws_root).close()

    async def body(client: Client) -> None:
        for name, args in (("plan_add", {"step": "map the maze"}), ("plan_done", {"step": 1}),
                           ("memory", {"command": "create", "path": "/memories/maze.md",
                                       "file_text": "exit is east\n"})):
            result = await client.call_tool(name, args)
            assert not result.is_error, text(result)
        shown = await client.call_tool("plan_show", {})
        assert "map the maze" in text(shown)

    with_client(build_server(ws_root), "planner", body)
    assert [(op.tool, op.agent) for op in ops(ws_root)[1:]] == [
        ("plan_add", "planner"), ("plan_done", "planner"), ("memory", "planner")]


def test_the_operators_agent_name_wins_over_the_clients(ws_root: Path) -> None:
    gitspace.init(ws_root).close()

    async def body(client: Client) -> None:
        assert not (await client.call_tool("append", {"path": "a.txt", "text": "x"})).is_error

    with_client(build_server(ws_root, default_agent="night-shift"), "claude-code", body)
    with_client(build_server(ws_root), "???", body)
    with_client(build_server(ws_root), "claude-code", body)
    assert [op.agent for op in ops(ws_root)[1:]] == ["night-shift", "mcp-client", "claude-code"]


def test_a_bug_in_a_tool_is_an_error_result_not_a_crash(
        ws_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(ws: gitspace.Workspace, args: dict[str, Any], **_: Any) -> gitspace.Result:
        raise RuntimeError("secret internals")

    monkeypatch.setitem(builtins.BUILTINS, "explode", Tool(
        "explode", "Fails on purpose.", {}, {"type": "object"}, False, explode))
    gitspace.init(ws_root).close()

    async def body(client: Client) -> None:
        broken = await client.call_tool("explode", {})
        assert broken.is_error and "unexpectedly" in text(broken)
        assert "secret internals" not in text(broken)  # the details stay in the server's log
        assert not (await client.call_tool("view", {"path": "."})).is_error

    with_client(build_server(ws_root), "tester", body)


def test_concurrent_calls_each_become_one_op(ws_root: Path) -> None:
    gitspace.init(ws_root).close()

    async def body(client: Client) -> None:
        async def append(n: int) -> None:
            result = await client.call_tool("append", {"path": "log.txt", "text": f"{n}\n"})
            assert not result.is_error, text(result)

        async with anyio.create_task_group() as tg:
            for n in range(8):
                tg.start_soon(append, n)

    with_client(build_server(ws_root), "swarm", body)
    appended = [op for op in ops(ws_root) if op.tool == "append"]
    assert len(appended) == 8 and {op.agent for op in appended} == {"swarm"}
    lines = (ws_root / "log.txt").read_text().split()
    assert sorted(lines, key=int) == [str(n) for n in range(8)]
    assert_clean(ws_root)


def test_resources_log_checkpoints_and_files(ws_root: Path) -> None:
    gitspace.init(ws_root).close()
    big_lines = VIEW_CAP // 40 + 50
    (ws_root / "big.txt").write_text("".join(f"line {n} " + "x" * 30 + "\n" for n in range(big_lines)))

    async def refused(client: Client, uri: str) -> str:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
        return str(caught.value)

    async def body(client: Client) -> None:
        uris = [str(r.uri) for r in (await client.list_resources()).resources]
        assert uris == ["gitspace://log", "gitspace://checkpoints"]
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == [
            "gitspace://file/{path}", "gitspace://op/{op}", "gitspace://op/{op}/file/{path}",
            "gitspace://checkpoint/{name}", "gitspace://branch/{name}"]
        assert "No checkpoints yet" in await read(client, "gitspace://checkpoints")
        created = await client.call_tool("create", {"path": "notes/a b.md", "file_text": "hi\n"})
        assert not created.is_error and created.meta
        op = created.meta["gitspace"]["op"]
        await client.call_tool("checkpoint", {"name": "first", "message": "saved here"})
        log = await read(client, "gitspace://log")
        assert f"op {op}  agent reader  create" in log and "[checkpoint first]" in log
        assert log.index(op) < log.index(" init ")  # newest first
        checkpoints = await read(client, "gitspace://checkpoints")
        assert "first  commit" in checkpoints and "saved here" in checkpoints
        view = await client.call_tool("view", {"path": "notes/a b.md"})
        assert await read(client, "gitspace://file/notes/a%20b.md") == text(view)
        assert "notes/" in await read(client, "gitspace://file/")  # a folder: the listing
        too_big = await refused(client, "gitspace://file/big.txt")
        assert "view cap" in too_big and "grep" in too_big
        assert "refused" in await refused(client, "gitspace://file/..%2F..%2Fetc%2Fpasswd")
        assert "refused" in await refused(client, "gitspace://file/%252e%252e/x")
        assert "refused" in await refused(client, "gitspace://file/.git/config")
        assert "does not exist" in await refused(client, "gitspace://file/nope.md")
        assert "no gitspace resource" in await refused(client, "gitspace://elsewhere")

    with_client(build_server(ws_root), "reader", body)


# -- real processes --------------------------------------------------------------------------


@pytest.fixture
def stderr_file(tmp_path: Path) -> Iterator[TextIO]:
    with open(tmp_path / "server-stderr.txt", "w+") as f:
        yield f


def test_stdio_subprocess(ws_root: Path, tmp_path: Path, stderr_file: TextIO) -> None:
    gitspace.init(ws_root).close()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gitspace", "-C", str(ws_root), "mcp"],
        env=clean_env(), cwd=str(tmp_path))

    async def body(client: Client) -> None:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "view" in names and names == sorted(names)
        created = await client.call_tool("create", {"path": "from-stdio.md", "file_text": "s\n"})
        assert not created.is_error, text(created)
        failed = await client.call_tool("view", {"path": "nope.md"})
        assert failed.is_error and "does not exist" in text(failed)
        assert "agent stdio-tester" in await read(client, "gitspace://log")

    with_client(stdio_client(params, errlog=stderr_file), "stdio tester", body)
    newest = gitspace_log(ws_root)[0]["op"]
    assert (newest["tool"], newest["agent"]) == ("create", "stdio-tester")
    stderr_file.seek(0)
    assert "Traceback" not in stderr_file.read()


def test_stdio_stdout_carries_only_protocol_messages(ws_root: Path, tmp_path: Path) -> None:
    ws_root.mkdir()
    write_script(ws_root / "constraints", "shout", True,
            'echo loud >> a.txt\necho "to stdout"\necho "to stderr" >&2\n')
    gitspace.init(ws_root).close()
    proc = subprocess.Popen([sys.executable, "-m", "gitspace", "-C", str(ws_root), "mcp"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=clean_env(), cwd=tmp_path)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> dict[str, Any] | None:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        proc.stdin.flush()
        while "id" in message:  # notifications (the op's log message) may come first
            reply = json.loads(proc.stdout.readline())
            if "id" in reply:
                return dict(reply)
            assert reply["method"].startswith("notifications/"), reply
        return None

    try:
        init = send({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw pipe", "version": "0"}}})
        assert init and init["result"]["serverInfo"]["name"] == "gitspace"
        send({"method": "notifications/initialized"})
        shout = send({"id": 2, "method": "tools/call",
                      "params": {"name": "shout", "arguments": {"path": "a.txt"}}})
        assert shout and shout["result"]["isError"] is False, shout
        missing = send({"id": 3, "method": "tools/call",
                        "params": {"name": "view", "arguments": {"path": "nope.md"}}})
        assert missing and missing["result"]["isError"] is True
        rest, err = proc.communicate(timeout=15)  # closes stdin: the client hangs up
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert rest == "", f"stdout carried more than protocol replies: {rest!r}"
    assert "Traceback" not in err
    newest = gitspace_log(ws_root)[0]["op"]
    assert (newest["tool"], newest["agent"]) == ("shout", "raw-pipe")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_listening(proc: subprocess.Popen[str], port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the server exited early: {proc.communicate()[1]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"nothing listened on 127.0.0.1:{port} within {timeout} s")


def test_streamable_http_on_loopback(ws_root: Path, tmp_path: Path) -> None:
    gitspace.init(ws_root).close()
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitspace", "-C", str(ws_root), "mcp", "--transport", "http",
         "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(), cwd=tmp_path)
    try:
        _wait_until_listening(proc, port)

        async def body(client: Client) -> None:
            appended = await client.call_tool("append", {"path": "h.txt", "text": "over http\n"})
            assert not appended.is_error, text(appended)
            denied = await client.call_tool("delete", {"path": "no-such-file"})
            assert denied.is_error

        url = f"http://127.0.0.1:{port}/mcp"
        with_client(url, "http tester", body)
        with_client(url, "legacy http", body, mode="legacy")
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C: uvicorn shuts down, gitspace exits 130
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 130, err
    assert f"http://127.0.0.1:{port}/mcp" in err and out == "" and "Traceback" not in err
    log = gitspace_log(ws_root)
    assert [(e["op"]["tool"], e["op"]["agent"]) for e in log[:2]] == [
        ("append", "legacy-http"), ("append", "http-tester")]
    assert (ws_root / "h.txt").read_text() == "over http\nover http\n"


def test_cli_refuses_a_bad_transport_and_a_missing_workspace(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gitspace", *args], capture_output=True,
                              text=True, env=clean_env(), cwd=tmp_path, timeout=60)

    gitspace.init(tmp_path / "ws").close()
    bad = run("-C", str(tmp_path / "ws"), "mcp", "--transport", "pigeon")
    assert bad.returncode == 2 and "stdio or http" in bad.stderr
    missing = run("-C", str(tmp_path / "nowhere"), "mcp")
    assert missing.returncode == 1 and "does not exist" in missing.stderr and missing.stdout == ""
