"""An MCP server and the CLI writing one workspace at once: every call one op, each where it stands.

A client's parallel tool calls through ``gitspace mcp`` (over stdio, as a harness runs it) and
person's ``gitspace call`` commands in other processes land on one branch together. Each is
recorded once, with exactly its change, none lost, and each op names the op before it as the
branch holds them (ledger format 4): the name is written under the checkout's lock, with the
tip the commit's compare-and-swap starts from, so ``verify`` and ``replay`` pass on what the
storm left. The scenario ends sealed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
from conftest import ops
from hostile import cli, gitspace_argv, sealed, workspace
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import Implementation

MCP_CALLS = 8
CLI_CALLS = 6


def _server_env() -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "LANG": "C.UTF-8",
            "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def test_mcp_and_cli_writers_at_once_each_make_one_op_where_it_stands(tmp_path: Path) -> None:
    with workspace(tmp_path, {"log.txt": ""}) as (ws, outside):
        ws.close()
        root = ws.root
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "gitspace", "-C", str(root), "mcp"],
                                       env=_server_env(), cwd=str(tmp_path))
        people: list[subprocess.Popen[str]] = []

        async def calls(client: Client) -> None:
            async def append(n: int) -> None:
                result = await client.call_tool("append", {"path": "log.txt",
                                                           "text": f"mcp {n}\n"})
                assert not result.is_error, result

            async with anyio.create_task_group() as tasks:
                for n in range(CLI_CALLS):  # the person's commands start with the client's calls
                    people.append(subprocess.Popen(
                        gitspace_argv(root, "call", "append", "--args",
                                      f'{{"path": "log.txt", "text": "cli {n}\\n"}}'),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
                for n in range(MCP_CALLS):
                    tasks.start_soon(append, n)

        async def main() -> None:
            async with Client(stdio_client(params), client_info=Implementation(
                    name="swarm", version="1.0")) as client:
                await calls(client)

        with sealed(root, outside, clean=True):
            anyio.run(main)
            for proc in people:
                out, err = proc.communicate(timeout=120)
                assert proc.returncode == 0, err
            appended = [op for op in ops(root) if op.tool == "append"]
            assert len(appended) == MCP_CALLS + CLI_CALLS
            assert len({op.op_id for op in appended}) == len(appended)
            lines = sorted((root / "log.txt").read_text().splitlines())
            assert lines == sorted([f"mcp {n}" for n in range(MCP_CALLS)]
                                   + [f"cli {n}" for n in range(CLI_CALLS)])
            assert all(op.after is not None for op in appended)
            verify = cli(root, "verify")
            assert verify.returncode == 0, verify.stdout + verify.stderr
            replay = cli(root, "replay")
            assert replay.returncode == 0, replay.stdout + replay.stderr
