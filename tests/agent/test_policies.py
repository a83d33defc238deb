"""The offline policies driving the real loop through the real tools on copies of the sample workspace.

What each run did is read back from git (``ops``, tags) and from the files it left, never from the
policy's own notes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLE, assert_clean, files, git, ops

import gitspace
from gitspace.agent.loop import Loop, LoopEvent, LoopOptions, RunOutcome
from gitspace.agent.model import blocks
from gitspace.agent.policies.maze import MazePolicy


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(SAMPLE, root)
    gitspace.init(root, agent="runner").close()
    return root


def run(root: Path, policy: MazePolicy, task: str, options: LoopOptions,
        events: list[LoopEvent] | None = None) -> RunOutcome:
    with gitspace.open(root, agent="runner") as ws:
        return Loop(ws, policy, options, (events.append if events is not None else None)).start(task)


def tool_events(events: list[LoopEvent], name: str) -> list[LoopEvent]:
    return [e for e in events if e.kind == "tool" and e.name == name]


def test_maze_is_escaped_with_the_designed_search(sample: Path) -> None:
    outcome = run(sample, MazePolicy(), "Escape the maze.", LoopOptions(max_steps=100))
    assert outcome.status == "done", outcome.text
    assert_escaped(sample)
    assert any(len([b for b in blocks(m) if b.get("type") == "tool_use"]) == 2
               for m in outcome.session.messages if m["role"] == "assistant")


def test_a_policy_resumed_from_its_session_file_finishes_the_same_search(sample: Path) -> None:
    first = run(sample, MazePolicy(), "Escape the maze.", LoopOptions(max_steps=5))
    assert first.status == "max_steps", first.text
    assert 0 < len([op for op in ops(sample) if op.tool == "move"]) < 20

    with gitspace.open(sample, agent="runner") as ws:  # a new process would start like this
        outcome = Loop(ws, MazePolicy(), LoopOptions(max_steps=100)).resume(first.session.id)
    assert outcome.status == "done", outcome.text
    assert outcome.session.id == first.session.id
    assert_escaped(sample)


def assert_escaped(root: Path) -> None:
    tools = [op.tool for op in ops(root)]
    assert tools.count("move") == 20
    assert tools.count("restore") == 4
    assert len(git(root, "tag", "-l", "gitspace/*").split()) == 6
    assert json.loads(files(root)["maze/position.json"])["moves"] == 12
    assert_clean(root)


def test_a_policy_that_cannot_act_gives_up_and_the_run_is_not_done(tmp_path: Path) -> None:
    gitspace.init(tmp_path / "fresh", agent="runner").close()  # no maze, no look or move tool
    outcome = run(tmp_path / "fresh", MazePolicy(), "Escape the maze", LoopOptions(max_steps=5))
    assert outcome.status == "gave_up" and not outcome.ok
    assert "offers no look, move tool" in outcome.text
    assert outcome.session.status == "gave_up"

