"""The SDK adapters, driven by the SDK's own tool runner against the fake Messages API: the model's
memory and file calls become gitspace ops, and what the SDK sends back is checked on the wire."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import assert_clean, files, ops, state
from fake_anthropic import FakeAnthropic, text, tool_use

import gitspace
from gitspace.agent.sdk import memory_tool, runnable_tools

pytest.importorskip("anthropic")


def results(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tool_result blocks of the request's last message, by tool_use id."""
    last = body["messages"][-1]
    assert last["role"] == "user"
    return {b["tool_use_id"]: b for b in last["content"] if b["type"] == "tool_result"}


def run(fake_api: FakeAnthropic, ws: gitspace.Workspace, goal: str) -> list[Any]:
    runner = fake_api.client().beta.messages.tool_runner(
        model="claude-test", max_tokens=1024, messages=[{"role": "user", "content": goal}],
        tools=[memory_tool(ws), *runnable_tools(ws)], thread=False)
    replies = list(runner)
    fake_api.done()
    return replies


def test_memory_tool_definition(ws: gitspace.Workspace) -> None:
    assert memory_tool(ws).to_dict() == {"type": "memory_20250818", "name": "memory"}
    cached = memory_tool(ws, cache_control={"type": "ephemeral"})
    assert cached.to_dict() == {"type": "memory_20250818", "name": "memory",
                                "cache_control": {"type": "ephemeral"}}
    assert cached.name == "memory"


def test_runnable_tools_mirror_the_registry(ws: gitspace.Workspace) -> None:
    from gitspace.tools.registry import all_tools

    tools = {t.name: t for t in runnable_tools(ws)}
    registry = all_tools(ws)
    assert set(tools) == set(registry) - {"memory"}
    assert tools["create"].to_dict() == {k: registry["create"].definition()[k]
                                         for k in ("name", "description", "input_schema")}


def test_runner_memory_then_create_then_answer(
    fake_api: FakeAnthropic, ws: gitspace.Workspace
) -> None:
    def first(body: dict[str, Any]) -> None:
        tools = {t["name"]: t for t in body["tools"]}
        assert tools["memory"] == {"type": "memory_20250818", "name": "memory"}
        assert tools["create"]["input_schema"]["required"] == ["path", "file_text"]
        assert body["messages"] == [{"role": "user", "content": "Remember I like tea."}]

    def second(body: dict[str, Any]) -> None:
        assert len(body["messages"]) == 3  # thread=False: the whole history every turn
        assert results(body) == {"toolu_1": {
            "type": "tool_result", "tool_use_id": "toolu_1",
            "content": "File created successfully at: /memories/user.md"}}

    def third(body: dict[str, Any]) -> None:
        assert len(body["messages"]) == 5
        result = results(body)["toolu_2"]
        assert result["content"] == "File created successfully at: notes/tea.md"
        assert not result.get("is_error")

    fake_api.reply(tool_use("toolu_1", "memory", {"command": "create", "path": "/memories/user.md",
                                                  "file_text": "likes tea\n"}),
                   stop_reason="tool_use", check=first)
    fake_api.reply(tool_use("toolu_2", "create", {"path": "notes/tea.md", "file_text": "tea\n"}),
                   stop_reason="tool_use", check=second)
    fake_api.reply(text("Noted: you like tea."), check=third)

    replies = run(fake_api, ws, "Remember I like tea.")
    assert [r.stop_reason for r in replies] == ["tool_use", "tool_use", "end_turn"]
    assert [(o.tool, o.args) for o in ops(ws.root)[1:]] == [
        ("memory", {"command": "create", "path": "/memories/user.md", "file_text": "likes tea\n"}),
        ("create", {"path": "notes/tea.md", "file_text": "tea\n"}),
    ]
    assert files(ws.root)["memories/user.md"] == "likes tea\n"
    assert files(ws.root)["notes/tea.md"] == "tea\n"
    assert_clean(ws.root)


def test_failed_calls_go_back_with_is_error(fake_api: FakeAnthropic, ws: gitspace.Workspace) -> None:
    def check(body: dict[str, Any]) -> None:
        got = results(body)
        assert list(got) == ["toolu_a", "toolu_b", "toolu_c"]  # in the order of the tool_uses
        assert got["toolu_a"] == {"type": "tool_result", "tool_use_id": "toolu_a", "is_error": True,
                                  "content": "Path must start with /memories, got: /etc/passwd"}
        assert got["toolu_b"]["is_error"] is True
        assert got["toolu_b"]["content"] == (
            "Path /memories/../notes/x would escape /memories directory")
        assert got["toolu_c"]["is_error"] is True
        assert got["toolu_c"]["content"].startswith("notes/none.md does not exist.")

    fake_api.reply(
        tool_use("toolu_a", "memory", {"command": "view", "path": "/etc/passwd"}),
        tool_use("toolu_b", "memory", {"command": "create", "path": "/memories/../notes/x",
                                       "file_text": "x"}),
        tool_use("toolu_c", "str_replace", {"path": "notes/none.md", "old_str": "a",
                                            "new_str": "b"}),
        stop_reason="tool_use")
    fake_api.reply(text("Those failed."), check=check)
    before = state(ws.root)
    run(fake_api, ws, "Try things that fail.")
    assert state(ws.root) == before
    assert_clean(ws.root)


def test_memory_view_through_the_runner_is_read_only(
    fake_api: FakeAnthropic, ws: gitspace.Workspace
) -> None:
    ws.call("memory", {"command": "create", "path": "/memories/a.md", "file_text": "alpha\n"})
    before = state(ws.root)

    def check(body: dict[str, Any]) -> None:
        assert results(body)["toolu_v"]["content"] == (
            "Here's the content of /memories/a.md with line numbers:\n     1\talpha\n     2\t")

    fake_api.reply(tool_use("toolu_v", "memory", {"command": "view", "path": "/memories/a.md"}),
                   stop_reason="tool_use")
    fake_api.reply(text("It says alpha."), check=check)
    run(fake_api, ws, "What do you remember?")
    assert state(ws.root) == before
