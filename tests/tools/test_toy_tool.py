"""Adding a built-in tool takes one registration: a toy tool, listed once, and nothing else
edited, shows up in `gitspace tools`, the MCP tool list and the agent's tool definitions, and
runs through each of them as one op."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from conftest import ops
from mcp import Client
from mcp.types import Implementation
from typer.testing import CliRunner

import gitspace
from gitspace.agent.loop import Loop
from gitspace.agent.model import Reply
from gitspace.cli import app
from gitspace.core.identity import Identity
from gitspace.core.transaction import Outcome, Txn
from gitspace.mcp_server import build_server
from gitspace.tools import builtins
from gitspace.tools.registry import builtin, obj, string


@builtin("toy_stamp", "Write a word into stamp.txt (a toy tool, for this test only). Calling it "
         "again with the same word changes nothing.", {"word": "hello"},
         obj(["word"], word=string("The word to stamp.")), mutates=True, idempotent=True)
def toy_stamp(ws: gitspace.Workspace, args: dict[str, Any], who: Identity) -> gitspace.Result:
    def stage(txn: Txn) -> Outcome:
        txn.write("stamp.txt", f"{args['word']}\n".encode())
        return Outcome(f"Stamped {args['word']}.", f"toy_stamp {args['word']}")

    return ws.transact(who.op(args), stage, who.author)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(builtins.BUILTINS, toy_stamp.name, toy_stamp)  # the one registration


def test_gitspace_tools_lists_it_and_call_runs_it(ws: gitspace.Workspace, toy: None) -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["-C", str(ws.root), "tools", "--json"])
    assert listed.exit_code == 0, listed.output
    tools = {t["name"]: t for t in json.loads(listed.stdout)["tools"]}
    assert tools["toy_stamp"]["mutates"] and tools["toy_stamp"]["example"] == {"word": "hello"}
    called = runner.invoke(app, ["-C", str(ws.root), "call", "toy_stamp", "--args",
                                 '{"word": "cli"}'])
    assert called.exit_code == 0 and "Stamped cli." in called.stdout
    assert ops(ws.root)[-1].tool == "toy_stamp"


def test_the_mcp_tool_list_has_it_with_its_annotations(ws: gitspace.Workspace, toy: None) -> None:
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with Client(build_server(ws.root), client_info=Implementation(name="toy-client",
                                                                             version="1")) as c:
            seen["tools"] = {t.name: t for t in (await c.list_tools()).tools}
            seen["call"] = await c.call_tool("toy_stamp", {"word": "mcp"})

    anyio.run(main)
    hints = seen["tools"]["toy_stamp"].annotations
    assert (hints.read_only_hint, hints.idempotent_hint, hints.destructive_hint) == (
        False, True, False)
    assert not seen["call"].is_error
    assert (ops(ws.root)[-1].tool, ops(ws.root)[-1].agent) == ("toy_stamp", "toy-client")


class Recording:
    """A model client that records the tools it is offered, calls the toy once, then stops."""

    name = "recording"
    scripted = True

    def __init__(self) -> None:
        self.offered: list[list[dict[str, Any]]] = []

    def create(self, *, system: Any, messages: Any, tools: list[dict[str, Any]],
               max_tokens: int) -> Reply:
        self.offered.append(tools)
        if len(self.offered) == 1:
            return Reply([{"type": "tool_use", "id": "toolu_toy", "name": "toy_stamp",
                           "input": {"word": "agent"}}], "tool_use")
        return Reply([{"type": "text", "text": "Stamped."}], "end_turn")

    def state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        pass


def test_the_agent_is_offered_it_and_calls_it(ws: gitspace.Workspace, toy: None) -> None:
    client = Recording()
    outcome = Loop(ws, client).start("Stamp the word agent.")
    assert outcome.ok, outcome.text
    offered = {d["name"]: d for d in client.offered[0]}
    assert offered["toy_stamp"]["input_schema"]["required"] == ["word"]
    assert "Example: " in offered["toy_stamp"]["description"]
    assert (ws.root / "stamp.txt").read_text() == "agent\n"
    assert ops(ws.root)[-1].tool_use_id == "toolu_toy"
