"""MCP over HTTP, attacked as a network neighbour and as a web page would.

The real ``gitspace mcp --transport http`` server in a subprocess, spoken to by a real HTTP
client (the standard library's) for the refusals and by the SDK's own client for real calls:
- on any non-loopback address it refuses to start without a bearer token;
- with a token, every request must carry it (401 otherwise), whatever the address;
- on every address, loopback included, a Host that is not this server's (DNS rebinding) is 421
  and a browser Origin from another site is 403, token or not.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
from conftest import head, ops
from hostile import assert_sound
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

import gitspace

INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "curl-like", "version": "1"}}})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(root: Path, *args: str, token: str | None = None) -> Iterator[tuple[int, list[str]]]:
    """The server in a subprocess; yields (port, its stderr lines so far)."""
    port = _free_port()
    env = dict(os.environ)
    env.pop("GITSPACE_MCP_TOKEN", None)
    if token is not None:
        env["GITSPACE_MCP_TOKEN"] = token
    proc = subprocess.Popen([sys.executable, "-m", "gitspace", "-C", str(root), "mcp",
                             "--transport", "http", "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server never listened"
                time.sleep(0.05)
        lines: list[str] = []
        yield port, lines
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        lines[:] = err.splitlines()
    assert "Traceback" not in err, err


def post(port: int, headers: dict[str, str], body: str = INIT) -> tuple[int, str]:
    """A raw POST to /mcp, every header exactly as given (Host included)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest("POST", "/mcp", skip_host=True, skip_accept_encoding=True)
        base = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "Content-Length": str(len(body.encode()))}
        for key, value in {**base, **headers}.items():
            if value is not None:
                conn.putheader(key, value)
        conn.endheaders(body.encode())
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        conn.close()


def call_with_sdk(port: int, token: str | None, path: str) -> None:
    """A real MCP client session over HTTP that creates ``path``."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def main() -> None:
        transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp",
                                           http_client=httpx2.AsyncClient(headers=headers))
        async with Client(transport, client_info=Implementation(name="net", version="1")) as c:
            result = await c.call_tool("create", {"path": path, "file_text": "over http\n"})
            assert not result.is_error, result

    anyio.run(main)


def test_no_token_no_network_address(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    gitspace.init(root).close()
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_MCP_TOKEN"}
    for host in ("0.0.0.0", "::", "192.0.2.10", "example.com"):
        proc = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), "mcp",
                               "--transport", "http", "--host", host, "--port",
                               str(_free_port())], capture_output=True, text=True, env=env,
                              timeout=60)
        assert proc.returncode == 1, (host, proc.stderr)
        assert "without a token" in proc.stderr and "hint" in proc.stderr.lower()
        assert "Traceback" not in proc.stderr
    assert_sound(root)


def test_a_token_guards_every_request_on_a_network_address(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    gitspace.init(root).close()
    token = "s3cret-token-for-the-test"
    with serving(root, "--host", "0.0.0.0", token=token) as (port, _):
        good = {"Authorization": f"Bearer {token}"}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token},
                        {"Authorization": f"Basic {token}"}, {"Authorization": f"Bearer {token}x"},
                        {"Authorization": "Bearer "}):
            status, text = post(port, headers)
            assert status == 401, (headers, status, text)
            assert token not in text
        for headers, want in (({**good, "Host": f"evil.example:{port}"}, 421),
                              ({**good, "Host": "127.0.0.1:1"}, 421),
                              ({**good, "Origin": "http://evil.example"}, 403),
                              ({**good, "Origin": f"http://127.0.0.1.evil.example:{port}"}, 403),
                              ({"Host": f"evil.example:{port}"}, 421)):
            status, _ = post(port, headers)
            assert status == want, (headers, status)
        status, text = post(port, {**good, "Origin": f"http://127.0.0.1:{port}"})
        assert status == 200 and "protocolVersion" in text
        tip = head(root)
        call_with_sdk(port, token, "net.txt")
    assert (root / "net.txt").read_text() == "over http\n" and head(root) != tip
    assert ops(root)[-1].tool == "create"
    assert_sound(root)


def test_a_new_token_is_made_shown_once_and_required(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    gitspace.init(root).close()
    with serving(root, "--host", "0.0.0.0", "--new-token") as (port, lines):
        status, _ = post(port, {})
        assert status == 401
    shown = [line for line in lines if "Bearer token" in line]
    assert len(shown) == 1, lines
    token = shown[0].rsplit(" ", 1)[1]
    assert len(token) >= 32
    assert_sound(root)


def test_loopback_needs_no_token_but_still_checks_host_and_origin(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    gitspace.init(root).close()
    with serving(root) as (port, _):
        assert post(port, {"Host": f"attacker.example:{port}"})[0] == 421
        assert post(port, {"Host": "localhost.attacker.example"})[0] == 421
        assert post(port, {"Origin": "http://attacker.example"})[0] == 403
        assert post(port, {"Origin": "null"})[0] == 403
        assert post(port, {"Host": f"localhost:{port}"})[0] == 200
        call_with_sdk(port, None, "local.txt")
    assert (root / "local.txt").exists()
    assert_sound(root)


def test_a_token_set_on_loopback_is_required_there_too(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    gitspace.init(root).close()
    with serving(root, token="loop-token") as (port, _):
        assert post(port, {})[0] == 401
        assert post(port, {"Authorization": "Bearer loop-token"})[0] == 200
    assert_sound(root)
