"""The plan tools: plan.md is the plan, each add/done is exactly one op on it, plan_show never
commits, a bad step number shows the plan and changes nothing, and a human's edits survive."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import assert_clean, call_ok, changed_files, files, head, ops, state

import gitspace
from gitspace.errors import BadArguments, ToolFailed


def plan_md(ws: gitspace.Workspace) -> str:
    return files(ws.root)["plan.md"]


def test_add_done_show(ws: gitspace.Workspace) -> None:
    start = len(ops(ws.root))
    assert call_ok(ws, "plan_add", {"step": "explore the maze"}).text == (
        "Added step 1: explore the maze\n1. [ ] explore the maze")
    assert call_ok(ws, "plan_add", {"step": "  find the exit "}).text == (
        "Added step 2: find the exit\n1. [ ] explore the maze\n2. [ ] find the exit")
    done = call_ok(ws, "plan_done", {"step": 1})
    assert done.text == ("Marked step 1 done: explore the maze\n"
                         "1. [x] explore the maze\n2. [ ] find the exit")
    assert plan_md(ws) == "# Plan\n\n1. [x] explore the maze\n2. [ ] find the exit\n"
    assert call_ok(ws, "plan_show").text == "1. [x] explore the maze\n2. [ ] find the exit"

    recorded = ops(ws.root)[start:]
    assert [(o.tool, o.args, o.agent) for o in recorded] == [
        ("plan_add", {"step": "explore the maze"}, "tester"),
        ("plan_add", {"step": "find the exit"}, "tester"),
        ("plan_done", {"step": 1}, "tester"),
    ]
    assert recorded[-1].op_id == done.op
    assert changed_files(ws.root) == ["plan.md"]
    assert_clean(ws.root)


def test_plan_show_never_commits(ws: gitspace.Workspace) -> None:
    before = state(ws.root)
    assert call_ok(ws, "plan_show").text == "The plan is empty; add steps with plan_add."
    assert call_ok(ws, "plan_show").op is None
    assert state(ws.root) == before
    call_ok(ws, "plan_add", {"step": "one"})
    tip = head(ws.root)
    shown = call_ok(ws, "plan_show")
    assert shown.text == "1. [ ] one" and shown.op is None and shown.commit is None
    assert head(ws.root) == tip
    assert_clean(ws.root)


@pytest.mark.parametrize("number", [0, 3, 99, -1])
def test_a_bad_step_number_shows_the_plan_and_commits_nothing(
    ws: gitspace.Workspace, number: int
) -> None:
    call_ok(ws, "plan_add", {"step": "one"})
    call_ok(ws, "plan_add", {"step": "two"})
    before = state(ws.root)
    result = ws.call("plan_done", {"step": number})
    assert isinstance(result.error, ToolFailed)
    assert result.text == f"There is no step {number}; the plan has 2 steps:\n1. [ ] one\n2. [ ] two"
    assert state(ws.root) == before
    assert_clean(ws.root)


def test_done_on_an_empty_plan(ws: gitspace.Workspace) -> None:
    result = ws.call("plan_done", {"step": 1})
    assert result.text == "There is no step 1; the plan is empty. Add steps with plan_add."
    assert "plan.md" not in files(ws.root)
    assert_clean(ws.root)


def test_marking_a_done_step_again_is_unchanged(ws: gitspace.Workspace) -> None:
    call_ok(ws, "plan_add", {"step": "one"})
    call_ok(ws, "plan_done", {"step": 1})
    tip = head(ws.root)
    again = call_ok(ws, "plan_done", {"step": 1})
    assert again.unchanged and again.text.startswith("unchanged")
    assert head(ws.root) == tip
    assert_clean(ws.root)


@pytest.mark.parametrize("step", ["one\ntwo", "one\r\ntwo", "trailing\n", "one\u2028two", "   "])
def test_a_step_is_one_non_blank_line(ws: gitspace.Workspace, step: str) -> None:
    before = state(ws.root)
    result = ws.call("plan_add", {"step": step})
    assert isinstance(result.error, BadArguments)
    if step.strip():
        assert result.text.startswith(
            "A plan step must be a single line, but this one contains a line break.")
    assert state(ws.root) == before


def test_long_and_empty_steps_are_refused_by_the_schema(ws: gitspace.Workspace) -> None:
    assert ws.call("plan_add", {"step": "x" * 200}).ok
    too_long = ws.call("plan_add", {"step": "x" * 201})
    assert isinstance(too_long.error, BadArguments) and "at most 200 characters" in too_long.text
    assert isinstance(ws.call("plan_add", {"step": ""}).error, BadArguments)
    assert isinstance(ws.call("plan_add", {}).error, BadArguments)
    assert len(ops(ws.root)) == 2  # init and the one good step


def test_a_plan_edited_by_a_human_is_still_parsed(ws: gitspace.Workspace) -> None:
    human = ("# Our plan\n\nSome prose the agent should keep.\n\n"
             "3) [X] read the map\n  7. [ ]walk north\n- a note, not a step\n9. [ ] open the door")
    (ws.root / "plan.md").write_text(human)
    assert call_ok(ws, "plan_show").text == (
        "1. [x] read the map\n2. [ ] walk north\n3. [ ] open the door")
    call_ok(ws, "plan_done", {"step": 2})
    # The outside edit is its own op; the tool's op changes only the one checkbox.
    assert [o.tool for o in ops(ws.root)[-2:]] == ["external_edit", "plan_done"]
    assert plan_md(ws) == human.replace("7. [ ]walk", "7. [x]walk")
    added = call_ok(ws, "plan_add", {"step": "leave"})
    assert added.text.startswith("Added step 4: leave\n")
    assert plan_md(ws) == human.replace("7. [ ]walk", "7. [x]walk") + "\n4. [ ] leave\n"
    assert_clean(ws.root)


def test_plan_md_that_is_a_link_is_refused(ws: gitspace.Workspace) -> None:
    (ws.root / "plan.md").symlink_to("/etc/hostname")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("plan_show", {}), ("plan_add", {"step": "x"}), ("plan_done", {"step": 1})]
    for tool, args in calls:
        result = ws.call(tool, args)
        assert not result.ok and "symbolic link" in result.text


def test_undo_of_plan_done(ws: gitspace.Workspace) -> None:
    call_ok(ws, "plan_add", {"step": "one"})
    done = call_ok(ws, "plan_done", {"step": 1})
    call_ok(ws, "undo")
    assert ops(ws.root)[-1].undo_of == (done.op,)
    assert call_ok(ws, "plan_show").text == "1. [ ] one"
    assert plan_md(ws) == "# Plan\n\n1. [ ] one\n"
    call_ok(ws, "redo")
    assert call_ok(ws, "plan_show").text == "1. [x] one"
    assert_clean(ws.root)


def test_tools_are_registered_with_examples(ws: gitspace.Workspace) -> None:
    from gitspace.tools.builtins import BUILTINS

    tools = BUILTINS
    assert {n: tools[n].mutates for n in ("plan_add", "plan_done", "plan_show")} == {
        "plan_add": True, "plan_done": True, "plan_show": False}
    assert "compacted" in tools["plan_show"].description
    for name in ("plan_add", "plan_done", "plan_show"):
        assert "Example:" in tools[name].definition()["description"]
