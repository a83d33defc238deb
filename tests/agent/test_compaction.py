"""The pairing checker and compaction of ``gitspace.agent.compaction``, tested by properties.

Hypothesis builds valid conversations shaped like the loop's: the goal, then rounds of an assistant
message with up to four parallel tool calls answered by one user message of results (errors, long
results, results as block lists, a note after the results), now and then a plain exchange of text,
sometimes a final answer or a call still pending. Some rounds are sent as two messages of one role,
which the API merges into one turn. Every compaction of such a conversation must stay valid, and
every naive cut must be flagged exactly when it parts a tool_use from its result.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitspace.agent.compaction import SUMMARY_MARKER, check, compact, fit, is_summary, size
from gitspace.agent.model import Block, Message, text_block, tool_result_block, tool_use_block

PROPERTY = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
GOAL: Message = {"role": "user", "content": "Find the way out of the maze."}
Draw = Callable[[st.SearchStrategy[Any]], Any]


# --- building conversations -------------------------------------------------------------------


def assistant(*content: Block) -> Message:
    return {"role": "assistant", "content": list(content)}


def user(*content: Block) -> Message:
    return {"role": "user", "content": list(content)}


def _result(draw: Draw, tool_id: str) -> Block:
    text = draw(st.sampled_from(["ok", "moved north\n  now at (3, 4)", "wall ahead " * 500]))
    block = tool_result_block(tool_id, text, is_error=draw(st.booleans()))
    if draw(st.booleans()):
        block["content"] = [text_block(part) for part in text.split("\n")]
    return block


def _split(draw: Draw, message: Message) -> list[Message]:
    """``message`` as one message, or as two messages of its role that the API merges back."""
    content = message["content"]
    if len(content) < 2 or not draw(st.booleans()):
        return [message]
    at = draw(st.integers(1, len(content) - 1))
    return [{**message, "content": content[:at]}, {**message, "content": content[at:]}]


def _tool_round(draw: Draw, ids: Iterator[int], answered: bool = True) -> list[Message]:
    calls = [tool_use_block(f"toolu_{n}", draw(st.sampled_from(["move", "look", "read_file"])), {"n": n})
             for n in itertools.islice(ids, draw(st.integers(1, 4)))]
    said = [text_block("Let me try that.")] if draw(st.booleans()) else []
    round_ = _split(draw, assistant(*said, *calls))
    if not answered:
        return round_
    results = draw(st.permutations([_result(draw, call["id"]) for call in calls]))
    note = [text_block("(12 steps left)")] if draw(st.booleans()) else []
    return round_ + _split(draw, user(*results, *note))


@st.composite
def conversations(draw: Draw) -> list[Message]:
    ids = itertools.count(1)
    messages = [copy.deepcopy(GOAL)]
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.integers(0, 4)) == 0:
            messages += [assistant(text_block("Should I keep going?")), user(text_block("Yes, go on."))]
        else:
            messages += _tool_round(draw, ids)
    ending = draw(st.sampled_from(["open", "answer", "pending"]))
    if ending == "answer":
        messages.append(assistant(text_block("The exit is at (9, 9).")))
    elif ending == "pending":
        messages += _tool_round(draw, ids, answered=False)
    return messages


def ends_pending(messages: list[Message]) -> bool:
    last = messages[-1]
    return last["role"] == "assistant" and any(b["type"] == "tool_use" for b in last["content"])


def tool_uses(messages: list[Message]) -> list[Block]:
    return [b for m in messages if isinstance(m["content"], list)
            for b in m["content"] if b["type"] == "tool_use"]


def result_ids(messages: list[Message]) -> set[str]:
    return {b["tool_use_id"] for m in messages if isinstance(m["content"], list)
            for b in m["content"] if b["type"] == "tool_result"}


def summary_lines(message: Message) -> list[str]:
    text: str = message["content"]
    assert text.startswith(SUMMARY_MARKER + "\n") or text == SUMMARY_MARKER
    return text.splitlines()[1:]


def call_prefix(use: Block) -> str:
    return f"- {use['name']}({json.dumps(use['input'], separators=(',', ':'))}) -> "


# --- properties ---------------------------------------------------------------------------------


@PROPERTY
@given(conversations())
def test_generated_conversations_are_valid(messages: list[Message]) -> None:
    assert check(messages, pending_ok=ends_pending(messages)) == []


@PROPERTY
@given(conversations())
def test_every_keep_last_leaves_a_valid_shorter_conversation(messages: list[Message]) -> None:
    pending = ends_pending(messages)
    before = copy.deepcopy(messages)
    for keep_last in range(len(messages) + 3):
        out = compact(messages, keep_last=keep_last)
        assert messages == before, "compact modified its input"
        assert check(out, pending_ok=pending) == [], f"keep_last={keep_last}"
        assert out[0] is messages[0]
        assert len(out) <= len(messages)
        if out == messages:
            continue
        assert is_summary(out[1])
        tail = out[2:]
        assert tail == messages[len(messages) - len(tail):]
        assert len(tail) >= min(keep_last, len(messages) - 1) or not tail
        folded = tool_uses(messages[1:len(messages) - len(tail)])
        assert_calls_summarised(folded, summary_lines(out[1]))
        for again in (keep_last, keep_last // 2, 0):
            twice = compact(out, keep_last=again)
            assert check(twice, pending_ok=pending) == [], f"keep_last={keep_last} then {again}"
            assert twice[0] is messages[0]
            assert sum(SUMMARY_MARKER in str(m["content"]) for m in twice) == 1


def assert_calls_summarised(folded: list[Block], lines: list[str]) -> None:
    """Every folded call has its line, except the oldest ones when the summary says it dropped some."""
    shown = [use for use in folded if any(line.startswith(call_prefix(use)) for line in lines)]
    assert shown == folded[len(folded) - len(shown):], "the summary lost a call that was not the oldest"
    if len(shown) < len(folded):
        assert "earlier steps dropped" in lines[0]


@PROPERTY
@given(conversations())
def test_a_naive_cut_is_flagged_exactly_when_it_orphans_a_result(messages: list[Message]) -> None:
    for k in range(1, len(messages) + 1):
        cut = [messages[0], *messages[k:]]
        orphaned = {use["id"] for use in tool_uses(messages[1:k])} & result_ids(messages[k:])
        problems = check(cut, pending_ok=ends_pending(messages))
        assert bool(problems) == bool(orphaned), f"cut at {k}: {problems}"
        for tool_id in orphaned:
            assert any(f"tool_result {tool_id} has no tool_use" in p for p in problems)


@PROPERTY
@given(conversations(), st.integers(0, 8), st.integers(200, 20_000))
def test_fit_stays_valid(messages: list[Message], keep_last: int, budget: int) -> None:
    out = fit(messages, budget, keep_last=keep_last)
    assert check(out, pending_ok=ends_pending(messages)) == []
    assert out[0] == messages[0]
    if size(messages) <= budget:
        assert out == messages  # within budget: untouched
        return
    tries = [keep_last, *range(keep_last - 1, 1, -1)]  # as many as fit promises to try
    candidates = [compact(messages, keep_last=k) for k in tries]
    if any(size(c) <= budget for c in candidates):
        assert size(out) <= budget  # some compaction fits: fit found one
    else:
        assert size(out) == min([size(messages), *map(size, candidates)])  # else the smallest


# --- the checker, one problem at a time ---------------------------------------------------------


def use(tool_id: str) -> Block:
    return tool_use_block(tool_id, "move", {"dir": "north"})


def result(tool_id: str) -> Block:
    return tool_result_block(tool_id, "moved")


BROKEN = {
    "result after text": (
        [GOAL, assistant(use("a")), user(text_block("here you go"), result("a"))],
        "message 2: tool_result a comes after text"),
    "result after text across merged messages": (
        [GOAL, assistant(use("a")), user(text_block("note")), user(result("a"))],
        "message 3: tool_result a comes after text"),
    "missing result": (
        [GOAL, assistant(use("a"), use("b")), user(result("a"))],
        "message 1: tool_use b has no tool_result in the user turn after it"),
    "duplicate tool_use id": (
        [GOAL, assistant(use("a")), user(result("a")), assistant(use("a")), user(result("a"))],
        "message 3: tool_use id a is used twice (first in message 1)"),
    "duplicate result": (
        [GOAL, assistant(use("a")), user(result("a"), result("a"))],
        "message 2: tool_result a answers its tool_use a second time"),
    "unknown id": (
        [GOAL, assistant(use("a")), user(result("a"), result("zz"))],
        "message 2: tool_result zz has no tool_use in the assistant message before it"),
    "orphan after a text-only assistant turn": (
        [GOAL, assistant(text_block("thinking")), user(result("a"))],
        "message 2: tool_result a has no tool_use in the assistant message before it"),
    "result for an older turn": (
        [GOAL, assistant(use("a")), user(result("a")), assistant(use("b")), user(result("b"), result("a"))],
        "message 4: tool_result a answers a tool_use from an earlier turn"),
    "unanswered trailing tool_use": (
        [GOAL, assistant(use("a"))],
        "message 1: tool_use a is never answered"),
    "assistant first": (
        [assistant(text_block("hi")), user(text_block("hello"))],
        "the first turn must be the user's goal"),
    "empty content": (
        [GOAL, assistant(), user(text_block("well?"))],
        "message 1: content is empty"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_check_names_each_problem(case: str) -> None:
    messages, expected = BROKEN[case]
    problems = check(messages)
    assert len(problems) == 1 and expected in problems[0], problems


def test_a_pending_tool_use_is_fine_only_when_allowed() -> None:
    messages = [GOAL, assistant(text_block("Two moves at once."), use("a"), use("b"))]
    assert len(check(messages)) == 2
    assert check(messages, pending_ok=True) == []
    assert check([*messages, user(result("a"), result("b"))]) == []


def test_check_catches_the_orphan_of_a_naive_slice() -> None:
    messages = [GOAL, assistant(use("a"), use("b")), user(result("a"), result("b")),
                assistant(text_block("Done."))]
    assert check(messages) == []
    assert check([GOAL, *messages[-2:]]) == [
        "message 1: tool_result a has no tool_use in the assistant message before it",
        "message 1: tool_result b has no tool_use in the assistant message before it",
    ]
    assert check([]) != []


# --- compaction and budgets ---------------------------------------------------------------------


def long_task(rounds: int, result_chars: int) -> list[Message]:
    messages = [GOAL]
    for n in range(rounds):
        messages += [assistant(use(f"t{n}")), user(tool_result_block(f"t{n}", "x" * result_chars))]
    return [*messages, assistant(text_block("Out."))]


def test_summary_lines_show_calls_errors_and_text() -> None:
    messages = [GOAL, assistant(text_block("Looking   around\nfirst."), use("a"), use("b")),
                user(tool_result_block("a", "a wall\n\n to the north " + "y" * 300),
                     tool_result_block("b", "no such direction", is_error=True)),
                assistant(text_block("Out."))]
    out = compact(messages, keep_last=1, max_result_chars=24)
    assert summary_lines(out[1]) == [
        "- you said: Looking around first.",
        '- move({"dir":"north"}) -> a wall to the north yyyy…',
        '- move({"dir":"north"}) -> no such direction [error]',
    ]
    assert out[2:] == messages[-1:]


def test_summaries_accumulate_lines_and_stay_bounded() -> None:
    messages = long_task(rounds=60, result_chars=10)
    once = compact(messages[:41], keep_last=2)
    assert len(summary_lines(once[1])) == 19
    twice = compact(once + messages[41:], keep_last=2)
    lines = summary_lines(twice[1])
    assert len(lines) == 40
    assert lines[0] == "- (20 earlier steps dropped to keep this summary short)"
    assert lines[-1].startswith('- move({"dir":"north"}) -> ')
    thrice = compact([*twice[:2], *long_task(5, 10)[1:]], keep_last=1)
    assert summary_lines(thrice[1])[0] == "- (25 earlier steps dropped to keep this summary short)"


def test_nothing_to_fold_returns_a_copy() -> None:
    messages = long_task(rounds=2, result_chars=10)
    for keep_last in (len(messages) - 2, len(messages) - 1, len(messages), 99):
        out = compact(messages, keep_last=keep_last)
        assert out == messages and out is not messages
    assert compact([GOAL], keep_last=0) == [GOAL]


def test_fit_shrinks_three_long_results_below_the_budget(capsys: pytest.CaptureFixture[str]) -> None:
    messages = long_task(rounds=3, result_chars=5_000)
    before = size(messages)
    out = fit(messages, 6_000)
    assert size(out) < 6_000 < before
    assert check(out) == []
    assert fit(messages, before) == messages
    assert capsys.readouterr() == ("", "")


def test_fit_keeps_fewer_messages_until_it_fits() -> None:
    messages = long_task(rounds=6, result_chars=2_000)
    out = fit(messages, 5_000, keep_last=8)
    assert size(out) <= 5_000 and check(out) == []
    assert len(out) < len(compact(messages, keep_last=8))


def test_size_counts_characters_of_canonical_json() -> None:
    messages = [{"role": "user", "content": "épée"}]
    assert size(messages) == len('[{"content":"épée","role":"user"}]')
