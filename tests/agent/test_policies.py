"""The offline policies driving the real loop through the real tools on copies of the sample workspace.

What each run did is read back from git (``ops``, tags) and from the files it left, never from the
policy's own notes.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLE, assert_clean, files, git, ops

import gitspace
from gitspace.agent.loop import Event, Loop, Options, Outcome
from gitspace.agent.model import blocks
from gitspace.agent.policies.journal import JournalPolicy
from gitspace.agent.policies.maze import MazePolicy

JOURNAL = "journal/worklog.jsonl"


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(SAMPLE, root)
    gitspace.init(root, agent="runner").close()
    return root


def run(root: Path, policy: JournalPolicy | MazePolicy, task: str, options: Options,
        events: list[Event] | None = None) -> Outcome:
    with gitspace.open(root, agent="runner") as ws:
        return Loop(ws, policy, options, (events.append if events is not None else None)).start(task)


def tool_events(events: list[Event], name: str) -> list[Event]:
    return [e for e in events if e.kind == "tool" and e.name == name]


def test_journal_is_summarised_chunk_by_chunk_within_a_small_conversation(sample: Path) -> None:
    events: list[Event] = []
    outcome = run(sample, JournalPolicy(), f"Summarise {JOURNAL}",
                  Options(budget=20_000, keep_last=4, max_steps=200), events)
    assert outcome.status == "done", outcome.text

    [peek] = tool_events(events, "peek")
    assert peek.result and "2,048 entries" in peek.result.text
    ranges = tool_events(events, "range")
    read = [e for e in ranges if e.result and e.result.ok]
    refused = [e for e in ranges if e.result and not e.result.ok]
    assert refused and all("Refused" in e.result.text for e in refused if e.result)
    for no in refused:  # narrowed: the next window starts at the same day and ends earlier
        after = ranges[ranges.index(no) + 1]
        assert after.input["start"] == no.input["start"]
        assert after.input["end"] < no.input["end"]
    assert read[0].input["start"] == "2023-01-02" and read[-1].input["end"] > "2024-12-30"
    assert all(a.input["end"] == b.input["start"] for a, b in zip(read, read[1:], strict=False))

    tree = files(sample)
    chunk_files = sorted(p for p in tree if p.startswith("summaries/") and p != "summaries/index.md")
    windows = sorted(f"summaries/{e.input['start']}_{e.input['end']}.md" for e in read
                     if e.result and not e.result.text.startswith("0 entries"))
    assert chunk_files == windows
    counts = [int(re.search(r"^Entries: (\d+)", tree[p], re.M).group(1))  # type: ignore[union-attr]
              for p in chunk_files]
    assert sum(counts) == 2_048
    assert all(len(tree[p]) <= 1_300 for p in chunk_files)
    index = tree["summaries/index.md"]
    assert "2,048 entries" in index
    assert all(f"({Path(p).name})" in index for p in chunk_files)

    creates = [op for op in ops(sample) if op.tool == "create"]
    assert sorted(op.args["path"] for op in creates) == sorted([*chunk_files, "summaries/index.md"])
    assert len(creates) == len(tool_events(events, "create"))
    assert all(op.session == outcome.session.id and op.tool_use_id for op in creates)
    assert not [op for op in ops(sample) if op.tool in ("range", "peek")]

    stats = outcome.session.stats
    journal_size = (sample / JOURNAL).stat().st_size
    assert stats.peak_request < journal_size / 4
    assert stats.compactions > 0
    assert stats.largest_result <= 16_000
    assert re.search(r"^1\. \[x\] Summarise the journal", tree["plan.md"], re.M)
    assert re.search(r"^2\. \[x\] Write the synthesis", tree["plan.md"], re.M)
    assert "memories/journal.md" in tree
    assert "2,048 entries" in outcome.text and "summaries/index.md" in outcome.text
    assert_clean(sample)


def test_maze_is_escaped_with_the_designed_search(sample: Path) -> None:
    outcome = run(sample, MazePolicy(), "Escape the maze.", Options(max_steps=100))
    assert outcome.status == "done", outcome.text
    assert_escaped(sample)
    assert any(len([b for b in blocks(m) if b.get("type") == "tool_use"]) == 2
               for m in outcome.session.messages if m["role"] == "assistant")


def test_a_policy_resumed_from_its_session_file_finishes_the_same_search(sample: Path) -> None:
    first = run(sample, MazePolicy(), "Escape the maze.", Options(max_steps=5))
    assert first.status == "max_steps", first.text
    assert 0 < len([op for op in ops(sample) if op.tool == "move"]) < 20

    with gitspace.open(sample, agent="runner") as ws:  # a new process would start like this
        outcome = Loop(ws, MazePolicy(), Options(max_steps=100)).resume(first.session.id)
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
    outcome = run(tmp_path / "fresh", MazePolicy(), "Escape the maze", Options(max_steps=5))
    assert outcome.status == "gave_up" and not outcome.ok
    assert "offers no look, move tool" in outcome.text
    assert outcome.session.status == "gave_up"

