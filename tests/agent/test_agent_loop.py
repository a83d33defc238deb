"""The tool loop through the real Anthropic SDK against a fake Messages API on 127.0.0.1.

Each scripted turn asserts on what the loop sent (the SDK's real request body); the commits each
run produced are read back with git.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_clean, files, git, ops
from fake_anthropic import FakeAnthropic, text, tool_use

import gitspace
from gitspace.agent import compaction
from gitspace.agent.clients import AnthropicClient
from gitspace.agent.loop import Loop, LoopOptions
from gitspace.agent.session import Session


def loop(ws: gitspace.Workspace, fake: FakeAnthropic, **options: Any) -> Loop:
    client = AnthropicClient(model="fake-model", sdk_client=fake.client())
    return Loop(ws, client, LoopOptions(**options))


@pytest.fixture
def agent_ws(ws_root: Path) -> Any:
    with gitspace.init(ws_root, agent="tester") as ws:
        yield ws


def last(body: dict[str, Any]) -> dict[str, Any]:
    return body["messages"][-1]


def results_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    message = last(body)
    assert message["role"] == "user"
    return message["content"]


def test_multi_step_run_commits_each_op_with_agent_session_and_tool_use_id(agent_ws, fake_api) -> None:
    def first(body: dict[str, Any]) -> None:
        assert body["model"] == "fake-model"
        assert body["messages"] == [{"role": "user", "content": "Write a todo list."}]
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        names = [t["name"] for t in body["tools"]]
        assert names == sorted(names) and {"create", "memory", "plan_add", "peek"} <= set(names)
        assert [t for t in body["tools"] if "cache_control" in t] == [body["tools"][-1]]

    def second(body: dict[str, Any]) -> None:
        assert body["messages"][1]["content"][1]["id"] == "toolu_1"
        assert results_of(body) == [{"type": "tool_result", "tool_use_id": "toolu_1",
                                     "content": "File created successfully at: todo.md"}]

    def third(body: dict[str, Any]) -> None:
        [result] = results_of(body)
        assert result["tool_use_id"] == "toolu_2" and "is_error" not in result
        assert compaction.check(body["messages"]) == []

    fake_api.reply(text("I'll write it."),
                   tool_use("toolu_1", "create", {"path": "todo.md", "file_text": "- a\n"}),
                   stop_reason="tool_use", check=first)
    fake_api.reply(tool_use("toolu_2", "str_replace",
                            {"path": "todo.md", "old_str": "- a", "new_str": "- b"}),
                   stop_reason="tool_use", check=second)
    fake_api.reply(text("Done: todo.md lists b."), check=third)
    outcome = loop(agent_ws, fake_api).start("Write a todo list.")
    fake_api.done()

    assert outcome.status == "done" and outcome.text == "Done: todo.md lists b." and outcome.calls == 3
    recorded = ops(agent_ws.root)[1:]
    assert [(o.tool, o.tool_use_id) for o in recorded] == [("create", "toolu_1"), ("str_replace", "toolu_2")]
    assert {o.agent for o in recorded} == {"tester"}
    assert {o.session for o in recorded} == {outcome.session.id}
    assert files(agent_ws.root)["todo.md"] == "- b\n"
    assert_clean(agent_ws.root)
    saved = Session.load(agent_ws.root, outcome.session.id)
    assert saved.status == "done" and saved.messages == outcome.session.messages


def test_parallel_tool_calls_get_all_results_in_one_message_in_order(agent_ws, fake_api) -> None:
    calls = [tool_use("toolu_a", "create", {"path": "a.md", "file_text": "A\n"}),
             tool_use("toolu_b", "create", {"path": "b.md", "file_text": "B\n"}),
             tool_use("toolu_c", "view", {"path": "a.md"})]

    def answered(body: dict[str, Any]) -> None:
        results = results_of(body)
        assert [r["tool_use_id"] for r in results] == ["toolu_a", "toolu_b", "toolu_c"]
        assert all(r["type"] == "tool_result" and not r.get("is_error") for r in results)
        assert "A" in results[2]["content"]
        assert len(body["messages"]) == 3

    fake_api.reply(*calls, stop_reason="tool_use")
    fake_api.reply(text("ok"), check=answered)
    outcome = loop(agent_ws, fake_api).start("Make two files.")
    fake_api.done()
    assert outcome.ok
    assert [o.tool_use_id for o in ops(agent_ws.root)[1:]] == ["toolu_a", "toolu_b"]


def test_failing_tools_come_back_as_is_error_and_commit_nothing(agent_ws, fake_api) -> None:
    before = git(agent_ws.root, "rev-parse", "HEAD")

    def errors(body: dict[str, Any]) -> None:
        missing, unknown, escape = results_of(body)
        assert missing["is_error"] and "does not exist" in missing["content"]
        assert unknown["is_error"] and "no tool named 'fly'" in unknown["content"]
        assert escape["is_error"] and "refused" in escape["content"].lower()

    fake_api.reply(tool_use("t1", "str_replace", {"path": "nope.md", "old_str": "x", "new_str": "y"}),
                   tool_use("t2", "fly", {}),
                   tool_use("t3", "create", {"path": "../outside.md", "file_text": "x"}),
                   stop_reason="tool_use")
    fake_api.reply(text("I could not."), check=errors)
    outcome = loop(agent_ws, fake_api).start("Try things.")
    fake_api.done()
    # Every call failed: the run did nothing, and says so rather than "done".
    assert outcome.status == "no_action" and not outcome.ok
    assert "Every one of the 3 tool call(s)" in outcome.text
    assert git(agent_ws.root, "rev-parse", "HEAD") == before
    assert not (agent_ws.root.parent / "outside.md").exists()
    assert_clean(agent_ws.root)


def test_pause_turn_sends_the_assistant_content_back_unchanged(agent_ws, fake_api) -> None:
    paused = [text("Thinking about it")]

    def resumed(body: dict[str, Any]) -> None:
        assert body["messages"][-1] == {"role": "assistant", "content": paused}

    fake_api.reply(*paused, stop_reason="pause_turn")
    fake_api.reply(text("Finished."), check=resumed)
    outcome = loop(agent_ws, fake_api).start("Long task.")
    fake_api.done()
    assert outcome.ok and outcome.calls == 2


def test_a_tool_call_cut_off_by_max_tokens_is_never_run(agent_ws, fake_api) -> None:
    before = git(agent_ws.root, "rev-parse", "HEAD")

    def retried(body: dict[str, Any]) -> None:
        assert body["max_tokens"] == 2048
        assert body["messages"] == [{"role": "user", "content": "Create it."}]

    fake_api.reply(tool_use("t1", "create", {"path": "half.md"}), stop_reason="max_tokens",
                   check=lambda body: (body["max_tokens"] == 1024) or pytest.fail("max_tokens"))
    fake_api.reply(text("Never mind."), check=retried)
    outcome = loop(agent_ws, fake_api, max_tokens=1024).start("Create it.")
    fake_api.done()
    assert outcome.ok and outcome.calls == 2
    assert git(agent_ws.root, "rev-parse", "HEAD") == before


def test_max_tokens_at_the_ceiling_stops_without_running_the_call(agent_ws, fake_api) -> None:
    fake_api.reply(tool_use("t1", "create", {"path": "x.md", "file_text": "x"}),
                   stop_reason="max_tokens")
    outcome = loop(agent_ws, fake_api, max_tokens=16_384).start("Create it.")
    fake_api.done()
    assert outcome.status == "max_tokens" and "was not run" in outcome.text
    assert not (agent_ws.root / "x.md").exists()


def test_an_answer_cut_off_by_max_tokens_is_returned_and_marked(agent_ws, fake_api) -> None:
    fake_api.reply(text("The first half of"), stop_reason="max_tokens")
    outcome = loop(agent_ws, fake_api).start("Explain.")
    assert outcome.status == "max_tokens"
    assert outcome.text.startswith("The first half of") and "cut off" in outcome.text


@pytest.mark.parametrize("reason, status", [
    ("refusal", "refusal"),
    ("model_context_window_exceeded", "context_window"),
    ("something_new", "stopped"),
])
def test_terminal_stop_reasons_are_surfaced(agent_ws, fake_api, reason: str, status: str) -> None:
    fake_api.reply(text("No."), stop_reason=reason)
    outcome = loop(agent_ws, fake_api).start("Do a thing.")
    fake_api.done()
    assert outcome.status == status and not outcome.ok
    assert Session.load(agent_ws.root, outcome.session.id).status == status


def test_stop_sequence_finishes(agent_ws, fake_api) -> None:
    fake_api.reply(text("Answer"), stop_reason="stop_sequence")
    assert loop(agent_ws, fake_api).start("Q").status == "done"


@pytest.mark.parametrize("status, kind", [(500, "api_error"), (429, "rate_limit_error"),
                                          (400, "invalid_request_error"),
                                          (401, "authentication_error")])
def test_api_errors_are_reported_and_the_session_resumes(agent_ws, fake_api, status: int, kind: str) -> None:
    fake_api.error(status, kind, f"fake {kind} happened")
    outcome = loop(agent_ws, fake_api).start("Q")
    assert outcome.status == "api_error"
    assert f"answered {status} ({kind}): fake {kind} happened" in outcome.text
    assert "test-key-not-secret" not in outcome.text and "--resume" in outcome.text

    fake_api.reply(text("Recovered."), check=lambda body: body["messages"] == [
        {"role": "user", "content": "Q"}] or pytest.fail("resumed history"))
    again = loop(agent_ws, fake_api).resume(outcome.session.id)
    fake_api.done()
    assert again.ok and again.text == "Recovered."


def test_the_step_limit_stops_honestly_with_every_op_committed(agent_ws, fake_api) -> None:
    for n in range(3):
        fake_api.reply(tool_use(f"t{n}", "append", {"path": "log.md", "text": f"{n}\n"}),
                       stop_reason="tool_use")
    outcome = loop(agent_ws, fake_api, max_steps=3).start("Append forever.")
    fake_api.done()
    assert outcome.status == "max_steps" and outcome.calls == 3
    assert "Stopped after 3 model calls" in outcome.text and outcome.session.id in outcome.text
    assert [o.tool for o in ops(agent_ws.root)[1:]] == ["append"] * 3
    assert files(agent_ws.root)["log.md"] == "0\n1\n2\n"
    assert_clean(agent_ws.root)
    saved = Session.load(agent_ws.root, outcome.session.id)
    assert saved.messages[-1]["content"][0]["tool_use_id"] == "t2" and saved.next == "call"


def test_tool_definitions_are_byte_stable_and_cached_at_the_end(agent_ws, fake_api) -> None:
    fake_api.reply(tool_use("t1", "view", {"path": ".gitignore"}), stop_reason="tool_use")
    fake_api.reply(text("ok"))
    loop(agent_ws, fake_api).start("Look.")
    first, second = (json.dumps(r["tools"]) for r in fake_api.requests)
    assert first == second
    tools = fake_api.requests[0]["tools"]
    memory = next(t for t in tools if t["name"] == "memory")
    assert {k: v for k, v in memory.items() if k != "cache_control"} == {
        "name": "memory", "type": "memory_20250818"}
    create = next(t for t in tools if t["name"] == "create")
    assert "Example:" in create["description"] and create["input_schema"]["type"] == "object"


def test_compaction_keeps_the_goal_and_never_breaks_pairing(agent_ws, fake_api) -> None:
    long_text = "word " * 1500
    for n in range(6):
        fake_api.reply(tool_use(f"t{n}", "create", {"path": f"f{n}.md", "file_text": long_text}),
                       tool_use(f"v{n}", "view", {"path": f"f{n}.md"}), stop_reason="tool_use",
                       check=lambda body: compaction.check(body["messages"]) == [] or pytest.fail("pairs"))

    def compacted(body: dict[str, Any]) -> None:
        assert body["messages"][0] == {"role": "user", "content": "Fill files."}
        assert compaction.is_summary(body["messages"][1])
        assert compaction.check(body["messages"]) == []
        assert compaction.size(body["messages"]) < 25_000

    fake_api.reply(text("done"), check=compacted)
    outcome = loop(agent_ws, fake_api, budget=20_000, keep_last=4).start("Fill files.")
    fake_api.done()
    assert outcome.ok and outcome.session.stats.compactions >= 1
    assert outcome.session.stats.peak_request < 25_000


def test_without_an_agent_name_ops_are_attributed_to_the_model(ws_root: Path, fake_api) -> None:
    fake_api.reply(tool_use("t1", "create", {"path": "a.md", "file_text": "a\n"}), stop_reason="tool_use")
    fake_api.reply(text("ok"))
    with gitspace.init(ws_root) as ws:
        outcome = loop(ws, fake_api).start("Make a.")
        assert ws.agent is None  # the loop lends the name for the run only
    assert ops(ws_root)[-1].agent == "fake-model" == outcome.session.agent


def test_a_damaged_session_file_is_reported_not_crashed_on(agent_ws, fake_api) -> None:
    fake_api.reply(text("ok"))
    outcome = loop(agent_ws, fake_api).start("Q")
    outcome.session.path.write_text('{"format": 1, "id": ')
    with pytest.raises(gitspace.GitspaceError, match="is damaged"):
        loop(agent_ws, fake_api).resume(outcome.session.id)


def test_one_session_runs_in_one_process_at_a_time(agent_ws, fake_api) -> None:
    fake_api.reply(tool_use("t1", "view", {"path": ".gitignore"}), stop_reason="tool_use")
    outcome = loop(agent_ws, fake_api, max_steps=1).start("Q")
    assert outcome.status == "max_steps"
    with outcome.session.running():  # as if another process were resuming it right now
        with pytest.raises(gitspace.GitspaceError, match="being run by another process"):
            loop(agent_ws, fake_api).resume(outcome.session.id)
    fake_api.done()


def test_a_damaged_session_is_listed_as_damaged_beside_the_others(agent_ws, fake_api) -> None:
    from gitspace.agent.session import listing

    fake_api.reply(text("one"))
    fake_api.reply(text("two"))
    first = loop(agent_ws, fake_api).start("Q1").session
    second = loop(agent_ws, fake_api).start("Q2").session
    first.path.write_text("{")
    statuses = {s.id: s.status for s in listing(agent_ws.root)}
    assert statuses == {first.id: "damaged", second.id: "done"}


def test_a_committed_transcript_is_its_own_kind_of_op(agent_ws, fake_api) -> None:
    from gitspace.agent.transcript import commit_transcript

    fake_api.reply(text("ok"))
    outcome = loop(agent_ws, fake_api).start("Say ok.")
    done = commit_transcript(agent_ws, outcome.session)
    [op] = [o for o in ops(agent_ws.root) if o.tool == "transcript"]
    assert op.source == "transcript" and done.changed == [f"transcripts/{outcome.session.id}.json"]


@pytest.mark.parametrize("reason", ["refusal", "model_context_window_exceeded"])
def test_a_tool_call_in_a_terminal_reply_is_never_run(agent_ws, fake_api, reason: str) -> None:
    before = git(agent_ws.root, "rev-parse", "HEAD")
    fake_api.reply(tool_use("t1", "create", {"path": "x.md", "file_text": "x\n"}), stop_reason=reason)
    outcome = loop(agent_ws, fake_api).start("Q")
    fake_api.done()
    assert not outcome.ok and git(agent_ws.root, "rev-parse", "HEAD") == before
    assert not (agent_ws.root / "x.md").exists()


def test_an_api_error_mid_run_resumes_without_repeating_committed_ops(agent_ws, fake_api) -> None:
    fake_api.reply(tool_use("t1", "append", {"path": "log.md", "text": "once\n"}),
                   stop_reason="tool_use")
    fake_api.error(500, "api_error", "boom")
    outcome = loop(agent_ws, fake_api).start("Log once.")
    assert outcome.status == "api_error"

    def has_the_result(body: dict[str, Any]) -> None:
        [result] = results_of(body)
        assert result["tool_use_id"] == "t1" and result["content"].startswith("Appended")

    fake_api.reply(text("Logged."), check=has_the_result)
    again = loop(agent_ws, fake_api).resume(outcome.session.id)
    fake_api.done()
    assert again.ok and files(agent_ws.root)["log.md"] == "once\n"
    assert [o.tool for o in ops(agent_ws.root)].count("append") == 1
