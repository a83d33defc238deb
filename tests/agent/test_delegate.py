"""Calls that nest: ``delegate`` through the real Anthropic SDK against the fake Messages API.

Children's model calls go to the same fake, in the order the nested loops make them, so one
script holds a whole call tree; a fake with no turn left answers 500, so a child run twice, or a
model called after a return, cannot pass.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_clean, files, git, message_of, ops
from fake_anthropic import FakeAnthropic, text, tool_use

import gitspace
from gitspace.agent.clients import AnthropicClient
from gitspace.agent.loop import Loop, LoopOptions
from gitspace.agent.session import Session, listing
from gitspace.storage import ledger


def client(fake: FakeAnthropic) -> AnthropicClient:
    return AnthropicClient(model="fake-model", sdk_client=fake.client())


def run(root: Path, fake: FakeAnthropic, task: str, **options: Any) -> Any:
    with gitspace.open(root, agent="boss") as ws:
        return Loop(ws, client(fake), LoopOptions(**options)).start(task)


def last_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = body["messages"][-1]
    assert last["role"] == "user"
    return last["content"]


def fresh(task: str) -> Any:
    """A check that the request is a child's first: its task and nothing else."""
    def check(body: dict[str, Any]) -> None:
        assert body["messages"] == [{"role": "user", "content": task}]
        names = {t["name"] for t in body["tools"]}
        assert {"return", "delegate", "create"} <= names
    return check


def answered(use_id: str, content: str, error: bool = False) -> Any:
    def check(body: dict[str, Any]) -> None:
        [result] = last_results(body)
        assert result["tool_use_id"] == use_id and result["content"] == content, result
        assert bool(result.get("is_error")) is error
    return check


def branches(root: Path) -> list[str]:
    return git(root, "branch", "--format=%(refname:short)").split()


def worktrees(root: Path) -> int:
    return git(root, "worktree", "list", "--porcelain").count("worktree ")


def script_depth_3(fake: FakeAnthropic) -> None:
    """boss -> level 1 -> level 2 -> level 3: each makes a file, the deepest returns 3, each
    parent returns what it got less one, and boss answers."""
    fake.reply(tool_use("toolu_p1", "delegate", {"task": "level 1", "returns": {"type": "integer"}}),
               stop_reason="tool_use")
    fake.reply(tool_use("toolu_a1", "create", {"path": "one.md", "file_text": "1\n"}),
               stop_reason="tool_use", check=fresh("level 1"))
    fake.reply(tool_use("toolu_a2", "delegate", {"task": "level 2"}), stop_reason="tool_use")
    fake.reply(tool_use("toolu_b1", "create", {"path": "two.md", "file_text": "2\n"}),
               stop_reason="tool_use", check=fresh("level 2"))
    fake.reply(tool_use("toolu_b2", "delegate", {"task": "level 3", "max_steps": 3}),
               stop_reason="tool_use")
    fake.reply(tool_use("toolu_c1", "create", {"path": "three.md", "file_text": "3\n"}),
               stop_reason="tool_use", check=fresh("level 3"))
    fake.reply(tool_use("toolu_c2", "return", {"value": 3}), stop_reason="tool_use")
    fake.reply(tool_use("toolu_b3", "return", {"value": 2}), stop_reason="tool_use",
               check=answered("toolu_b2", "3"))
    fake.reply(tool_use("toolu_a3", "return", {"value": 1}), stop_reason="tool_use",
               check=answered("toolu_a2", "2"))
    fake.reply(text("All three levels are done."), check=answered("toolu_p1", "1"))


def check_depth_3(root: Path, top: str) -> None:
    """What a finished depth-3 run leaves: three ops in call order on main, each naming its
    parent call; one session per level, linked; no branch or worktree left over."""
    made = [op for op in ops(root) if op.tool == "create"]
    assert [op.args["path"] for op in made] == ["one.md", "two.md", "three.md"]
    assert len({op.op_id for op in made}) == 3
    by_id = {s.id: s for s in listing(root)}
    assert len(by_id) == 4
    chain = [by_id[top]]
    for _ in range(3):
        [below] = [s for s in by_id.values() if s.parent_session == chain[-1].id]
        chain.append(below)
    assert [s.depth for s in chain] == [0, 1, 2, 3]
    assert [s.status for s in chain] == ["done", "returned", "returned", "returned"]
    assert [s.value for s in chain[1:]] == [1, 2, 3]
    assert [s.parent_tool_use_id for s in chain[1:]] == ["toolu_p1", "toolu_a2", "toolu_b2"]
    for op, session in zip(made, chain[1:], strict=True):
        assert op.session == session.id and op.format == ledger.PARENTED
        assert (op.parent_session, op.parent_tool_use_id) == (session.parent_session,
                                                             session.parent_tool_use_id)
        assert op.agent == "boss"
    assert files(root)["three.md"] == "3\n"
    assert branches(root) == ["main"] and worktrees(root) == 1
    assert_clean(root)
    git(root, "fsck", "--no-progress", "--strict")


def test_a_child_runs_fresh_on_its_own_branch_and_its_value_is_the_result(
        ws_root: Path, fake_api: FakeAnthropic) -> None:
    gitspace.init(ws_root, agent="boss").close()
    seen: dict[str, Any] = {}

    def child_first(body: dict[str, Any]) -> None:
        fresh("Write the summary and say how long it is.")(body)
        assert [t for t in body["tools"] if t["name"] == "return"][0]["input_schema"] == {
            "type": "object", "properties": {"value": {"type": "integer"}},
            "required": ["value"], "additionalProperties": False}
        # Its worktree: the branch delegate/<session>, checked out beside the workspace.
        [here] = [line for line in git(ws_root, "worktree", "list").splitlines()
                  if "[delegate/" in line]
        seen["worktree"] = here

    fake_api.reply(text("Delegating."), tool_use("toolu_p1", "delegate", {
        "task": "Write the summary and say how long it is.", "returns": {"type": "integer"}}),
        stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c1", "create", {"path": "summary.md", "file_text": "short\n"}),
                   stop_reason="tool_use", check=child_first)
    fake_api.reply(tool_use("toolu_c2", "return", {"value": 6}), stop_reason="tool_use")
    fake_api.reply(text("It is 6 characters."), check=answered("toolu_p1", "6"))
    outcome = run(ws_root, fake_api, "Get a summary written.")
    fake_api.done()

    assert outcome.status == "done"
    child_branch = seen["worktree"].split("[")[1].rstrip("]")
    assert ".git/gitspace/delegates/" in seen["worktree"]
    [made] = [op for op in ops(ws_root) if op.tool == "create"]
    [child] = [s for s in listing(ws_root) if s.parent_session == outcome.session.id]
    assert child_branch == f"delegate/{child.id}"
    assert made.session == child.id and made.parent_session == outcome.session.id
    assert made.parent_tool_use_id == "toolu_p1"
    message = message_of(ws_root)
    assert f"Gitspace-Parent-Session: {outcome.session.id}\nGitspace-Parent-Tool-Use-Id: toolu_p1" \
        in message and f"Gitspace-Format: {ledger.PARENTED}" in message
    assert child.joined == git(ws_root, "rev-parse", "HEAD").strip()  # a fast-forward
    assert git(ws_root, "rev-list", "--merges", "HEAD").strip() == ""
    # The parent's conversation holds the call and its value, nothing of the child's.
    said = json.dumps(outcome.session.messages)
    assert "toolu_c1" not in said and "summary.md" not in said
    assert branches(ws_root) == ["main"] and worktrees(ws_root) == 1
    assert_clean(ws_root)
    replayed = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(ws_root), "replay"],
                              capture_output=True, text=True)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr


def test_an_outside_change_a_childs_op_finds_names_the_parent_call_too(
        ws_root: Path, fake_api: FakeAnthropic) -> None:
    """Not only its tool calls: the external op a child's op commits first is the child's."""
    with gitspace.init(ws_root, agent="boss") as ws:
        assert ws.call("create", {"path": "note.md", "file_text": "draft\n"}).ok

    def someone_edits_the_childs_copy(body: dict[str, Any]) -> None:
        [line] = [line for line in git(ws_root, "worktree", "list").splitlines()
                  if "[delegate/" in line]
        (Path(line.split()[0]) / "note.md").write_text("draft\nby hand\n")

    fake_api.reply(tool_use("toolu_p1", "delegate", {"task": "Finish the note."}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c1", "str_replace", {"path": "note.md", "old_str": "draft",
                                                        "new_str": "final"}),
                   stop_reason="tool_use", check=someone_edits_the_childs_copy)
    fake_api.reply(tool_use("toolu_c2", "return", {"value": "done"}), stop_reason="tool_use")
    fake_api.reply(text("Finished."), check=answered("toolu_p1", '"done"'))
    outcome = run(ws_root, fake_api, "Get the note finished.")
    fake_api.done()

    assert outcome.status == "done"
    [child] = [s for s in listing(ws_root) if s.parent_session == outcome.session.id]
    external, edit = ops(ws_root)[-2:]
    assert (external.source, external.tool, edit.tool) == ("external", "external_edit",
                                                           "str_replace")
    for op in (external, edit):
        assert (op.session, op.parent_session, op.parent_tool_use_id, op.format) == (
            child.id, outcome.session.id, "toolu_p1", ledger.PARENTED)
    assert files(ws_root)["note.md"] == "final\nby hand\n"
    assert_clean(ws_root)
    git(ws_root, "fsck", "--no-progress", "--strict")
    replayed = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(ws_root), "replay"],
                              capture_output=True, text=True)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr


def test_calls_nest_three_deep(ws_root: Path, fake_api: FakeAnthropic) -> None:
    gitspace.init(ws_root, agent="boss").close()
    script_depth_3(fake_api)
    outcome = run(ws_root, fake_api, "Go three levels down.")
    fake_api.done()
    assert outcome.status == "done"
    check_depth_3(ws_root, outcome.session.id)


CRASHING = """
import os, signal, sys
import anthropic
import gitspace
from gitspace.agent.clients import AnthropicClient
from gitspace.agent.loop import Loop
root, base_url, kind, nth = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
from gitspace import faults
seen, armed = [], []
def die():
    os.kill(os.getpid(), signal.SIGKILL)
def arm(point, then):
    armed.append(faults.inject(point, then))  # kept: a dropped one disarms
    armed[-1].__enter__()
def on_event(event):  # the top loop sees every level's events
    if event.kind == kind.split(":")[0]:
        seen.append(event)
        if len(seen) == nth and kind.endswith(":join"):  # at the next ref move's first file
            arm("ref.update", lambda: arm("file.write", die))
        elif len(seen) == nth:
            die()
client = AnthropicClient(model="fake-model", sdk_client=anthropic.Anthropic(
    api_key="test-key", base_url=base_url, max_retries=0))
with gitspace.open(root, agent="boss") as ws:
    Loop(ws, client, on_event=on_event).start("Go three levels down.")
"""


@pytest.mark.parametrize("kind, nth", [
    ("tool", 2),  # level 2's op committed, its conversation not saved yet
    ("delegate", 3),  # level 3's session saved, its branch and worktree not made
    ("tool", 4),  # level 3's return answered, its session not saved as returned
    ("tool", 5),  # level 3 joined level 2's branch, level 2 not told yet
    ("tool", 9),  # level 1 joined main, boss not told yet
    ("tool:join", 8),  # main moved to level 1's tip, its files not written yet
])
def test_a_kill_anywhere_in_a_nested_run_then_resume_repeats_nothing(
        ws_root: Path, fake_api: FakeAnthropic, kind: str, nth: int) -> None:
    gitspace.init(ws_root, agent="boss").close()
    script_depth_3(fake_api)
    child = subprocess.run([sys.executable, "-c", CRASHING, str(ws_root), fake_api.base_url,
                            kind, str(nth)], capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr
    [top] = [s for s in listing(ws_root) if s.parent_session is None]
    assert top.status == "running"
    if kind == "tool:join":  # killed inside the join: main moved, the journal finishes it
        assert (ws_root / ".git" / "gitspace" / "journal.json").exists()
        assert "one.md" not in files(ws_root)
        assert git(ws_root, "ls-tree", "--name-only", "main").split().count("one.md") == 1

    with gitspace.open(ws_root, agent="boss") as ws:
        outcome = Loop(ws, client(fake_api)).resume(top.id)
    fake_api.done()  # every scripted turn asked for once: no child ran again, no call repeated
    assert outcome.status == "done", outcome.text
    check_depth_3(ws_root, top.id)


def test_a_child_that_does_not_return_is_an_error_result_and_keeps_its_ops(
        ws_root: Path, fake_api: FakeAnthropic) -> None:
    gitspace.init(ws_root, agent="boss").close()

    def told(body: dict[str, Any]) -> None:
        [result] = last_results(body)
        assert result["is_error"] is True and result["tool_use_id"] == "toolu_p1"
        assert "ended without returning a value (status no_value)" in result["content"]
        assert "its ops stay on branch delegate/" in result["content"]
        assert "I would rather chat." in result["content"]

    fake_api.reply(tool_use("toolu_p1", "delegate", {"task": "Draft it.",
                                                     "returns": {"type": "string"}}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c1", "create", {"path": "draft.md", "file_text": "d\n"}),
                   stop_reason="tool_use")
    fake_api.reply(text("I would rather chat."))
    fake_api.reply(text("The child failed; I stop."), check=told)
    outcome = run(ws_root, fake_api, "Get a draft.")
    fake_api.done()

    assert outcome.status == "no_action"  # its one call failed
    assert [op.tool for op in ops(ws_root)] == ["init"]  # nothing joined main
    [kept] = [b for b in branches(ws_root) if b.startswith("delegate/")]
    assert [op.tool for op in ops(ws_root, kept)] == ["init", "create"]
    assert worktrees(ws_root) == 1 and "draft.md" not in files(ws_root)
    assert_clean(ws_root)


def test_a_child_whose_api_fails_is_an_error_result_not_a_hang(
        ws_root: Path, fake_api: FakeAnthropic) -> None:
    gitspace.init(ws_root, agent="boss").close()

    def told(body: dict[str, Any]) -> None:
        [result] = last_results(body)
        assert result["is_error"] is True
        assert "(status api_error); it made no op" in result["content"]

    fake_api.reply(tool_use("toolu_p1", "delegate", {"task": "Think."}), stop_reason="tool_use")
    fake_api.error(529, "overloaded_error", "Overloaded")
    fake_api.reply(text("No luck."), check=told)
    assert run(ws_root, fake_api, "Try.").status == "no_action"
    fake_api.done()
    assert branches(ws_root) == ["main"] and worktrees(ws_root) == 1


def test_a_child_at_its_step_limit_is_an_error_result(ws_root: Path,
                                                      fake_api: FakeAnthropic) -> None:
    gitspace.init(ws_root, agent="boss").close()
    fake_api.reply(tool_use("toolu_p1", "delegate", {"task": "Loop.", "max_steps": 1}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c1", "plan_show", {}), stop_reason="tool_use")

    def told(body: dict[str, Any]) -> None:
        assert "(status max_steps)" in last_results(body)[0]["content"]

    fake_api.reply(text("Stopped."), check=told)
    assert run(ws_root, fake_api, "Try.").status == "no_action"
    fake_api.done()


def test_bad_delegate_arguments_are_an_error_result(ws_root: Path,
                                                    fake_api: FakeAnthropic) -> None:
    gitspace.init(ws_root, agent="boss").close()
    fake_api.reply(tool_use("toolu_p1", "delegate", {"task": ""}),
                   tool_use("toolu_p2", "delegate", {"task": "x", "returns": {"pattern": "a"}}),
                   tool_use("toolu_p3", "delegate", {"task": "x", "max_steps": 0}),
                   stop_reason="tool_use")

    def told(body: dict[str, Any]) -> None:
        first, second, third = last_results(body)
        assert all(r["is_error"] for r in (first, second, third))
        assert first["content"].startswith("delegate.task must be at least 1 character long")
        assert "unsupported keyword 'pattern'" in second["content"]
        assert third["content"].startswith("delegate.max_steps must be at least 1")

    fake_api.reply(text("Fine."), check=told)
    run(ws_root, fake_api, "Try.")
    fake_api.done()
    assert len(listing(ws_root)) == 1 and branches(ws_root) == ["main"]


def test_a_branch_moved_meanwhile_is_joined_by_a_merge_that_replays(
        ws_root: Path, fake_api: FakeAnthropic) -> None:
    gitspace.init(ws_root, agent="boss").close()

    def someone_else_writes(body: dict[str, Any]) -> None:  # while the child works
        with gitspace.open(ws_root, agent="other") as ws:
            assert ws.call("create", {"path": "theirs.md", "file_text": "t\n"}).ok

    fake_api.reply(tool_use("toolu_p1", "delegate", {"task": "Write mine."}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c1", "create", {"path": "mine.md", "file_text": "m\n"}),
                   stop_reason="tool_use", check=someone_else_writes)
    fake_api.reply(tool_use("toolu_c2", "return", {"value": "mine.md"}), stop_reason="tool_use")
    fake_api.reply(text("Merged."), check=answered("toolu_p1", '"mine.md"'))
    run(ws_root, fake_api, "Get it written.")
    fake_api.done()

    assert files(ws_root)["mine.md"] == "m\n" and files(ws_root)["theirs.md"] == "t\n"
    parents = git(ws_root, "log", "-1", "--format=%P").split()
    assert len(parents) == 2
    assert "Gitspace-" not in message_of(ws_root)  # a plain merge, not an op
    assert branches(ws_root) == ["main"]
    assert_clean(ws_root)
    replayed = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(ws_root), "replay"],
                              capture_output=True, text=True)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr


def test_a_conflicting_join_is_an_error_result_and_keeps_the_branch(
        ws_root: Path, fake_api: FakeAnthropic) -> None:
    gitspace.init(ws_root, agent="boss").close()

    def someone_else_writes(body: dict[str, Any]) -> None:
        with gitspace.open(ws_root, agent="other") as ws:
            assert ws.call("create", {"path": "same.md", "file_text": "theirs\n"}).ok

    def told(body: dict[str, Any]) -> None:
        [result] = last_results(body)
        assert result["is_error"] is True
        assert 'returned "done", but its ops could not join your branch' in result["content"]
        assert "conflicts in same.md" in result["content"]

    fake_api.reply(tool_use("toolu_p1", "delegate", {"task": "Write same.md."}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c1", "create", {"path": "same.md", "file_text": "mine\n"}),
                   stop_reason="tool_use", check=someone_else_writes)
    fake_api.reply(tool_use("toolu_c2", "return", {"value": "done"}), stop_reason="tool_use")
    fake_api.reply(text("Conflict."), check=told)
    run(ws_root, fake_api, "Go.")
    fake_api.done()
    assert files(ws_root)["same.md"] == "theirs\n"
    assert len([b for b in branches(ws_root) if b.startswith("delegate/")]) == 1
    assert worktrees(ws_root) == 1
    assert_clean(ws_root)


def test_a_child_is_resumed_only_through_its_parent(ws_root: Path,
                                                    fake_api: FakeAnthropic) -> None:
    gitspace.init(ws_root, agent="boss").close()
    fake_api.reply(tool_use("toolu_p1", "delegate", {"task": "x"}), stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c1", "return", {"value": 1}), stop_reason="tool_use")
    fake_api.reply(text("ok"))
    top = run(ws_root, fake_api, "Go.")
    [child] = [s for s in listing(ws_root) if s.parent_session]
    with gitspace.open(ws_root) as ws, pytest.raises(gitspace.GitspaceError) as caught:
        Loop(ws, client(fake_api)).resume(child.id, "more")
    assert f"gitspace run --resume {top.session.id}" in str(caught.value)
    assert Session.load(ws_root, child.id).status == "returned"


def test_at_the_depth_limit_delegate_is_not_offered(ws_root: Path,
                                                    fake_api: FakeAnthropic) -> None:
    gitspace.init(ws_root, agent="boss").close()

    def offered(body: dict[str, Any]) -> None:
        assert "delegate" in {t["name"] for t in body["tools"]}

    def not_offered(body: dict[str, Any]) -> None:
        assert "delegate" not in {t["name"] for t in body["tools"]}

    fake_api.reply(tool_use("toolu_p1", "delegate", {"task": "x"}), stop_reason="tool_use",
                   check=offered)
    fake_api.reply(tool_use("toolu_c1", "return", {"value": 1}), stop_reason="tool_use",
                   check=not_offered)
    fake_api.reply(text("ok"))
    run(ws_root, fake_api, "Go.", max_depth=1)
    fake_api.done()


def test_a_scripted_policy_delegates_to_a_fresh_player_of_its_kind(ws_root: Path) -> None:
    from gitspace.agent.policies.base import Policy, PolicyCall, Seen

    players: list[Policy] = []

    class Splitter(Policy):
        name = "splitter"

        def __init__(self) -> None:
            super().__init__()
            players.append(self)

        def decide(self, task: str, seen: list[Seen]) -> Any:
            self.notes.setdefault("tasks", []).append(task)
            if task.startswith("count "):
                return self.finish("", len(task.split()) - 1)
            if not seen:
                return [PolicyCall("delegate", {"task": "count a b c", "returns": {"type": "integer"}}),
                        PolicyCall("delegate", {"task": "count d e", "returns": {"type": "integer"}})]
            return f"Counted {sum(json.loads(s.text) for s in seen)} words."

    gitspace.init(ws_root, agent="boss").close()
    with gitspace.open(ws_root, agent="boss") as ws:
        outcome = Loop(ws, Splitter()).start("Count every word.")
    assert outcome.status == "done" and outcome.text.endswith("Counted 5 words.")
    assert len(players) == 3  # the parent and one fresh player per child
    assert [p.notes["tasks"] for p in players] == [
        ["Count every word.", "Count every word."], ["count a b c"], ["count d e"]]
    assert sorted(s.value for s in listing(ws_root) if s.parent_session) == [2, 3]
def test_a_child_that_cannot_be_set_up_is_an_error_result_and_leaves_nothing(
        ws_root: Path, fake_api: FakeAnthropic) -> None:
    """A branch named delegate (no delegate/X can exist beside it), then a link planted where
    the children's worktrees go: each call fails with the reason, and nothing is left behind."""
    gitspace.init(ws_root, agent="boss").close()
    git(ws_root, "branch", "delegate")
    planted = ws_root.parent / "elsewhere"
    planted.mkdir()

    def plant(body: dict[str, Any]) -> None:
        git(ws_root, "branch", "-D", "delegate")
        folder = ws_root / ".git" / "gitspace" / "delegates"
        folder.rmdir()  # made, empty, by the first call
        folder.symlink_to(planted)

    def told(says: str) -> Any:
        def check(body: dict[str, Any]) -> None:
            [result] = last_results(body)
            assert result["is_error"] and "could not run" in result["content"], result
            assert says in result["content"], result
        return check

    fake_api.reply(tool_use("toolu_p1", "delegate", {"task": "x"}), stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_p2", "delegate", {"task": "y"}), stop_reason="tool_use",
                   check=lambda body: (told("a ref with a prefix of that name")(body),
                                       plant(body)))
    fake_api.reply(text("Both failed."), check=told("not a folder (a link or a file"))
    outcome = run(ws_root, fake_api, "Try twice.")
    fake_api.done()
    assert outcome.status == "no_action"
    assert branches(ws_root) == ["main"] and worktrees(ws_root) == 1
    assert list(planted.iterdir()) == []
    children = [s for s in listing(ws_root) if s.parent_session]
    assert [s.status for s in children] == ["failed", "failed"]
    assert_clean(ws_root)


def test_a_child_holds_only_what_it_touched_and_its_scripts_read_the_files_it_sees(
        ws_root: Path, fake_api: FakeAnthropic) -> None:
    """The child's worktree starts empty and fills as it is touched (team/agent_worktrees.py):
    a read of data/2/ brings that folder, not data/1/; a read-only built-in script (grep) reads
    the parent's files while the child has written nothing, and the child's own once it has."""
    with gitspace.init(ws_root, agent="boss") as ws:
        for folder in range(3):
            for n in range(5):
                path = ws_root / "data" / str(folder) / f"f{n}.txt"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"needle {folder}/{n}\n")
        assert ws.snapshot().ok
    seen: dict[str, Any] = {}

    def worktree() -> Path:
        [line] = [line for line in git(ws_root, "worktree", "list").splitlines()
                  if "[delegate/" in line]
        return Path(line.split()[0])

    def grep_found(use_id: str, *wanted: str) -> Any:
        def check(body: dict[str, Any]) -> None:
            [result] = last_results(body)
            assert result["tool_use_id"] == use_id and not result.get("is_error"), result
            for text_ in wanted:
                assert text_ in result["content"], result["content"]
            seen[use_id] = sorted(p.relative_to(worktree()).as_posix()
                                  for p in worktree().rglob("*.txt"))
        return check

    fake_api.reply(tool_use("toolu_p1", "delegate", {"task": "Look around."}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c1", "view", {"path": "data/2/f1.txt"}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c2", "grep", {"pattern": "needle", "path": "data",
                                                 "max_matches": 100}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c3", "create", {"path": "data/1/mine.txt",
                                                   "file_text": "needle mine\n"}),
                   stop_reason="tool_use", check=grep_found("toolu_c2", "data/1/f3.txt"))
    fake_api.reply(tool_use("toolu_c4", "grep", {"pattern": "needle mine", "path": "data"}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c5", "return", {"value": "seen"}), stop_reason="tool_use",
                   check=grep_found("toolu_c4", "data/1/mine.txt"))
    fake_api.reply(text("Done."), check=answered("toolu_p1", '"seen"'))
    outcome = run(ws_root, fake_api, "Have a look.")
    fake_api.done()

    assert outcome.status == "done"
    assert seen["toolu_c2"] == [f"data/2/f{n}.txt" for n in range(5)], "more than it touched"
    assert "data/0/f0.txt" in seen["toolu_c4"]  # made whole for the script, once it wrote
    assert files(ws_root)["data/1/mine.txt"] == "needle mine\n"
    assert worktrees(ws_root) == 1
    assert_clean(ws_root)
