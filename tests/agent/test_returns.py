"""A value back: the ``return`` tool and ``ask``, through the real Anthropic SDK against the fake
Messages API. A fake with no turn left answers 500, so "no further model call" is checked by
scripting none."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_clean, files, ops
from fake_anthropic import FakeAnthropic, text, tool_use

import gitspace
from gitspace.agent import NoValue, ask
from gitspace.agent.clients import AnthropicClient
from gitspace.agent.loop import Loop, LoopOptions
from gitspace.agent.returns import Returns
from gitspace.agent.session import Session
from gitspace.errors import BadArguments


@pytest.fixture
def agent_ws(ws_root: Path) -> Any:
    with gitspace.init(ws_root, agent="tester") as ws:
        yield ws


def tool(body: dict[str, Any], name: str) -> dict[str, Any]:
    [found] = [t for t in body["tools"] if t["name"] == name]
    return found


def results(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = body["messages"][-1]
    assert last["role"] == "user"
    return last["content"]


COUNT = {"type": "object", "properties": {"count": {"type": "integer", "minimum": 0}},
         "required": ["count"], "additionalProperties": False}


def test_an_object_schema_is_the_return_tools_input_and_a_valid_return_ends_the_run(
        agent_ws, fake_api: FakeAnthropic) -> None:
    def offered(body: dict[str, Any]) -> None:
        assert tool(body, "return")["input_schema"] == COUNT
        names = [t["name"] for t in body["tools"]]
        assert names == sorted(names) and "cache_control" in body["tools"][-1]
        assert "call the return tool" in body["system"][0]["text"]

    fake_api.reply(tool_use("toolu_1", "create", {"path": "todo.md", "file_text": "- [ ] a\n"}),
                   stop_reason="tool_use", check=offered)
    fake_api.reply(tool_use("toolu_2", "return", {"count": 1}), stop_reason="tool_use")
    # No third turn: a model call after the return would get a 500 and fail the test.
    answer = ask(agent_ws, "Count the open todos.", returns=COUNT, client=fake_api.client(),
                 model="fake-model")
    fake_api.done()

    assert answer.value == {"count": 1}
    assert [op.tool for op in answer.ops] == ["create"]
    assert {op.session for op in answer.ops} == {answer.session}
    saved = Session.load(agent_ws.root, answer.session)
    assert saved.status == "returned" and saved.value == {"count": 1}
    assert saved.returns == COUNT and saved.steps == 2
    [returned] = saved.messages[-1]["content"]
    assert returned["tool_use_id"] == "toolu_2" and not returned.get("is_error")
    assert_clean(agent_ws.root)


def test_any_other_schema_is_wrapped_as_value(agent_ws, fake_api: FakeAnthropic) -> None:
    def wrapped(body: dict[str, Any]) -> None:
        assert tool(body, "return")["input_schema"] == {
            "type": "object", "properties": {"value": {"type": "integer"}},
            "required": ["value"], "additionalProperties": False}

    fake_api.reply(tool_use("toolu_1", "return", {"value": 3}), stop_reason="tool_use",
                   check=wrapped)
    answer = ask(agent_ws, "How many?", returns={"type": "integer"}, client=fake_api.client())
    fake_api.done()
    assert answer.value == 3 and answer.ops == []


def test_an_invalid_value_is_an_error_result_and_the_loop_goes_on(agent_ws,
                                                                  fake_api: FakeAnthropic) -> None:
    def told(body: dict[str, Any]) -> None:
        [result] = results(body)
        assert result["tool_use_id"] == "toolu_1" and result["is_error"] is True
        assert result["content"] == "value.count must be at least 0, got -2."

    def told_again(body: dict[str, Any]) -> None:
        [result] = results(body)
        assert result["is_error"] is True
        assert "unknown field 'extra'" in result["content"]

    fake_api.reply(tool_use("toolu_1", "return", {"count": -2}), stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_2", "return", {"count": 2, "extra": 1}),
                   stop_reason="tool_use", check=told)
    fake_api.reply(tool_use("toolu_3", "return", {"count": 2}), stop_reason="tool_use",
                   check=told_again)
    answer = ask(agent_ws, "Count.", returns=COUNT, client=fake_api.client())
    fake_api.done()
    assert answer.value == {"count": 2}
    saved = Session.load(agent_ws.root, answer.session)
    assert saved.stats.tool_calls == 3 and saved.stats.failed_calls == 2


def test_a_return_beside_other_calls_is_taken_after_they_all_succeed(
        agent_ws, fake_api: FakeAnthropic) -> None:
    """The turn's other calls run first, in order; the return is answered last and ends it."""
    fake_api.reply(text("Writing, then returning."),
                   tool_use("toolu_1", "return", {"value": "notes.md"}),
                   tool_use("toolu_2", "create", {"path": "notes.md", "file_text": "x\n"}),
                   stop_reason="tool_use")
    answer = ask(agent_ws, "Write notes and say where.", returns={"type": "string"},
                 client=fake_api.client())
    fake_api.done()
    assert answer.value == "notes.md" and [op.tool for op in answer.ops] == ["create"]
    assert files(agent_ws.root)["notes.md"] == "x\n"
    saved = Session.load(agent_ws.root, answer.session)
    answered = saved.messages[-1]["content"]
    assert [b["tool_use_id"] for b in answered] == ["toolu_1", "toolu_2"]  # one each, in order
    assert not any(b.get("is_error") for b in answered)


def test_a_return_beside_a_failed_call_is_refused_and_the_loop_goes_on(
        agent_ws, fake_api: FakeAnthropic) -> None:
    def refused(body: dict[str, Any]) -> None:
        ret, view = results(body)
        assert view["tool_use_id"] == "toolu_2" and view["is_error"] is True
        assert ret["tool_use_id"] == "toolu_1" and ret["is_error"] is True
        assert ret["content"].startswith("The value was not accepted: 1 other call(s) of this "
                                         "turn failed")

    fake_api.reply(tool_use("toolu_1", "return", {"value": "seen"}),
                   tool_use("toolu_2", "view", {"path": "missing.md"}), stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_3", "return", {"value": "missing"}), stop_reason="tool_use",
                   check=refused)
    answer = ask(agent_ws, "Look.", returns={"type": "string"}, client=fake_api.client())
    fake_api.done()
    assert answer.value == "missing"


def test_two_returns_in_one_turn_are_both_refused(agent_ws, fake_api: FakeAnthropic) -> None:
    def both(body: dict[str, Any]) -> None:
        assert [r["is_error"] for r in results(body)] == [True, True]
        assert "called 2 times in one turn" in results(body)[0]["content"]

    fake_api.reply(tool_use("toolu_1", "return", {"value": 1}),
                   tool_use("toolu_2", "return", {"value": 2}), stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_3", "return", {"value": 2}), stop_reason="tool_use",
                   check=both)
    assert ask(agent_ws, "Pick.", returns={"type": "integer"}, client=fake_api.client()).value == 2
    fake_api.done()


def test_a_text_answer_raises_with_the_session_and_a_next_message_resumes_it(
        agent_ws, fake_api: FakeAnthropic) -> None:
    fake_api.reply(text("There are 4."))
    with pytest.raises(NoValue) as caught:
        ask(agent_ws, "How many?", returns={"type": "integer"}, client=fake_api.client())
    error = caught.value
    assert error.status == "no_value" and error.session in str(error)
    assert "There are 4." in str(error) and f"resume={error.session!r}" in str(error)
    assert Session.load(agent_ws.root, error.session).status == "no_value"

    def asked_again(body: dict[str, Any]) -> None:
        assert body["messages"][-1] == {"role": "user", "content": "Call return with it."}
        assert tool(body, "return")["input_schema"]["properties"]["value"] == {"type": "integer"}

    fake_api.reply(tool_use("toolu_1", "return", {"value": 4}), stop_reason="tool_use",
                   check=asked_again)
    again = ask(agent_ws, "Call return with it.", resume=error.session,
                returns={"type": "integer"}, client=fake_api.client())
    fake_api.done()
    assert again.value == 4 and again.session == error.session


def test_the_step_limit_raises_with_the_session(agent_ws, fake_api: FakeAnthropic) -> None:
    fake_api.reply(tool_use("toolu_1", "plan_show", {}), stop_reason="tool_use")
    with pytest.raises(NoValue) as caught:
        ask(agent_ws, "Think.", client=fake_api.client(), max_steps=1)
    fake_api.done()
    assert caught.value.status == "max_steps"
    assert f"gitspace run --resume {caught.value.session}" in str(caught.value)


def test_a_refusal_raises(agent_ws, fake_api: FakeAnthropic) -> None:
    fake_api.reply(text("No."), stop_reason="refusal")
    with pytest.raises(NoValue) as caught:
        ask(agent_ws, "Do it.", client=fake_api.client())
    assert caught.value.status == "refusal"


@dataclasses.dataclass
class Item:
    name: str
    done: bool = False


@dataclasses.dataclass
class Todos:
    items: list[Item]
    owner: str | None


def test_a_dataclass_describes_checks_and_builds_the_value(agent_ws,
                                                           fake_api: FakeAnthropic) -> None:
    def described(body: dict[str, Any]) -> None:
        schema = tool(body, "return")["input_schema"]
        assert schema["required"] == ["items", "owner"]
        assert schema["properties"]["owner"] == {"type": ["string", "null"]}
        assert schema["properties"]["items"]["items"]["required"] == ["name"]

    def rejected(body: dict[str, Any]) -> None:
        [result] = results(body)
        assert result["is_error"] and result["content"] == \
            "value.items[0].done must be a boolean, got a string."

    fake_api.reply(tool_use("toolu_1", "return", {"items": [{"name": "a", "done": "yes"}],
                                                  "owner": None}),
                   stop_reason="tool_use", check=described)
    fake_api.reply(tool_use("toolu_2", "return", {"items": [{"name": "a", "done": True}],
                                                  "owner": None}),
                   stop_reason="tool_use", check=rejected)
    answer = ask(agent_ws, "List.", returns=Todos, client=fake_api.client())
    fake_api.done()
    assert answer.value == Todos([Item("a", True)], None)


def test_a_pydantic_model_checks_with_pydantic(agent_ws, fake_api: FakeAnthropic) -> None:
    import pydantic

    class Count(pydantic.BaseModel):
        count: int = pydantic.Field(ge=0)

    def rejected(body: dict[str, Any]) -> None:
        [result] = results(body)
        assert result["is_error"] and "does not fit Count" in result["content"]
        assert "greater than or equal to 0" in result["content"]

    fake_api.reply(tool_use("toolu_1", "return", {"count": -1}), stop_reason="tool_use",
                   check=lambda body: tool(body, "return")["input_schema"] ==
                   Count.model_json_schema() or pytest.fail("schema"))
    fake_api.reply(tool_use("toolu_2", "return", {"count": 5}), stop_reason="tool_use",
                   check=rejected)
    answer = ask(agent_ws, "Count.", returns=Count, client=fake_api.client())
    fake_api.done()
    assert answer.value == Count(count=5)
    assert Session.load(agent_ws.root, answer.session).value == {"count": 5}


def test_a_schema_that_cannot_be_enforced_is_refused_before_any_model_call(agent_ws) -> None:
    with pytest.raises(BadArguments, match="unsupported keyword 'pattern'"):
        Returns.of({"type": "string", "pattern": "^a"})
    with pytest.raises(BadArguments, match="not set"):
        Returns.of({1, 2})
    assert not (agent_ws.root / ".gitspace" / "sessions").exists()


def test_without_returns_the_loop_offers_no_return_tool(agent_ws, fake_api: FakeAnthropic) -> None:
    def none(body: dict[str, Any]) -> None:
        assert "return" not in {t["name"] for t in body["tools"]}
        assert "call the return tool" not in body["system"][0]["text"]

    def unknown(body: dict[str, Any]) -> None:
        [result] = results(body)
        assert result["is_error"] and "no tool named 'return'" in result["content"]

    fake_api.reply(tool_use("toolu_1", "return", {"value": 1}), stop_reason="tool_use", check=none)
    fake_api.reply(text("Fine."), check=unknown)
    client = AnthropicClient(model="fake-model", sdk_client=fake_api.client())
    outcome = Loop(agent_ws, client, LoopOptions()).start("Go.")
    fake_api.done()
    assert outcome.status == "no_action" and outcome.value is None
    assert [op.tool for op in ops(agent_ws.root)] == ["init"]


def test_ask_hands_back_a_value_its_agent_got_from_a_child_with_every_op_it_caused(
        agent_ws, fake_api: FakeAnthropic) -> None:
    fake_api.reply(tool_use("toolu_1", "create", {"path": "a.md", "file_text": "a\n"}),
                   tool_use("toolu_2", "delegate", {"task": "Write b.", "returns": COUNT}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c1", "create", {"path": "b.md", "file_text": "b\n"}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c2", "return", {"count": 1}), stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_3", "return", {"count": 2}), stop_reason="tool_use",
                   check=lambda body: results(body)[1]["content"] == '{"count":1}'
                   or pytest.fail("the child's value"))
    answer = ask(agent_ws, "Write two files and count them.", returns=COUNT,
                 client=fake_api.client())
    fake_api.done()
    assert answer.value == {"count": 2}
    assert [op.args["path"] for op in answer.ops] == ["a.md", "b.md"]
    assert answer.ops[1].parent_session == answer.session


def test_ask_forks_from_an_op_and_returns_from_there(agent_ws, fake_api: FakeAnthropic) -> None:
    fake_api.reply(tool_use("toolu_1", "create", {"path": "a.md", "file_text": "a\n"}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_2", "return", {"value": "a.md"}), stop_reason="tool_use")
    first = ask(agent_ws, "Write a file.", returns={"type": "string"}, client=fake_api.client())
    [made] = first.ops

    def from_the_op(body: dict[str, Any]) -> None:
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
        assert body["messages"][-1]["content"][-1] == {"type": "text", "text": "Name it b."}

    fake_api.reply(tool_use("toolu_3", "rename", {"old_path": "a.md", "new_path": "b.md"}),
                   stop_reason="tool_use", check=from_the_op)
    fake_api.reply(tool_use("toolu_4", "return", {"value": "b.md"}), stop_reason="tool_use")
    forked = ask(agent_ws, "Name it b.", fork=made.op_id, returns={"type": "string"},
                 client=fake_api.client())
    fake_api.done()
    assert forked.value == "b.md" and [op.tool for op in forked.ops] == ["rename"]
    assert agent_ws.branch() == f"fork/{made.op_id[-8:].lower()}"
    assert files(agent_ws.root).get("b.md") == "a\n" and "a.md" not in files(agent_ws.root)
    with pytest.raises(BadArguments, match="not both"):
        ask(agent_ws, "x", fork=made.op_id, resume=first.session, client=fake_api.client())


def _chained_schema(hops: int) -> dict[str, object]:
    """A value schema reached through ``hops`` $refs, recursive through its items."""
    defs: dict[str, object] = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(hops)}
    defs[f"d{hops}"] = {"type": ["array", "integer"], "items": {"$ref": "#"}}
    return {"$ref": "#/$defs/d0", "$defs": defs}


def _nested(levels: int, leaf: object = 1) -> object:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def test_a_ref_chain_and_a_value_at_their_limits_are_checked_through_the_api() -> None:
    returns = Returns.of(_chained_schema(31))  # 32 $refs in a row: the documented limit
    value = _nested(31)  # 32 levels with {"value": ...}: the arguments' limit
    assert returns.check({"value": value}) == value
    with pytest.raises(BadArguments) as refused:
        returns.check({"value": _nested(31, "one")})
    assert "must be an array or an integer" in refused.value.message
