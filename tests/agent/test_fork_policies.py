"""``gitspace run --fork OP`` with every scripted policy, from ops early, midway and late in a
run, as a person runs it (real processes, real repositories); a fork resumed; and a run that
crashes, which must leave the workspace on the branch it found and no session "running".

What a fork must keep: every tool-use id of its conversation unique (a scripted player numbers
its calls past the ones it was handed), names of its own that meet none of the original's later
ones (the maze's checkpoints), and its player's notes as they were when it asked for the call
(read back from the session's log; when a snapshot replaced those lines, rebuilt from the
conversation).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLE, assert_clean, git, gitspace_cli, ops
from fake_anthropic import FakeAnthropic, text, tool_use

from gitspace.agent import compaction
from gitspace.agent.session import Session, listing


def ran(tmp_path: Path, policy: str, task: str) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(SAMPLE, root)
    assert gitspace_cli(tmp_path, "init", str(root)).returncode == 0
    done = gitspace_cli(root, "run", task, "--policy", policy)
    assert done.returncode == 0, done.stderr
    return root


def forkable(root: Path) -> list[str]:
    """The op ids of the first run that a fork can start after (a tool call's own commit),
    oldest first."""
    return [op.op_id for op in ops(root) if op.source == "tool" and op.tool_use_id]


def check_fork(root: Path, op_id: str, policy: str, *extra: str) -> Session:
    """Fork at ``op_id`` with ``policy``; the fork finishes, on its own branch."""
    before = {s.id for s in listing(root)}
    main = git(root, "rev-parse", "main").strip()
    tags = set(git(root, "tag", "-l", "gitspace/*").split())
    forked = gitspace_cli(root, "run", "--fork", op_id[-8:], "Go on from here.", "--policy",
                          policy, *extra)
    assert forked.returncode == 0, forked.stdout + forked.stderr
    [fork] = [s for s in listing(root) if s.id not in before and s.parent_session is None]
    assert fork.status == "done" and fork.forked_from and fork.forked_from["op"] == op_id
    assert git(root, "branch", "--show-current").strip() == fork.branch != "main"
    assert git(root, "rev-parse", "main").strip() == main  # the original did not move
    ids = [b["id"] for m in fork.messages if m["role"] == "assistant"
           for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
    assert len(ids) == len(set(ids)) and not compaction.check(fork.messages)
    assert tags <= set(git(root, "tag", "-l", "gitspace/*").split())  # none replaced
    assert not [s.id for s in listing(root) if s.status == "running"]
    assert_clean(root)
    git(root, "switch", "-q", "main")
    return fork


def test_a_maze_run_forks_from_any_op_and_the_fork_escapes(tmp_path: Path) -> None:
    root = ran(tmp_path, "maze", "Escape the maze")
    points = forkable(root)
    for op_id in (points[0], points[len(points) // 2], points[-1]):
        fork = check_fork(root, op_id, "maze")
        assert "I escaped the maze" in json.dumps(fork.messages[-1])
    # Two forks from one op: the second's checkpoints meet neither the original's nor the
    # first fork's (checkpoint names are the workspace's, not a branch's).
    check_fork(root, points[len(points) // 2], "maze")


def test_a_fork_of_a_fork_and_a_fork_resumed(tmp_path: Path) -> None:
    root = ran(tmp_path, "maze", "Escape the maze")
    fork = check_fork(root, forkable(root)[5], "maze")
    again = [op.op_id for op in ops(root, fork.branch or "") if op.session == fork.id
             and op.tool_use_id][2]
    check_fork(root, again, "maze")
    # Stopped at --max-steps, then resumed from main: the resume goes back to its branch.
    before = {s.id for s in listing(root)}
    stopped = gitspace_cli(root, "run", "--fork", forkable(root)[3][-8:], "Again.", "--policy",
                           "maze", "--max-steps", "2")
    assert stopped.returncode == 5, stopped.stderr
    [short] = [s for s in listing(root) if s.id not in before]
    git(root, "switch", "-q", "main")
    resumed = gitspace_cli(root, "run", "--resume", short.id)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"to {short.branch}, where this session stopped" in resumed.stdout
    assert git(root, "branch", "--show-current").strip() == short.branch
    assert Session.load(root, short.id).status == "done"


@pytest.mark.parametrize("policy", ["journal", "journal-nested"])
def test_a_journal_run_forks_midway_and_late(tmp_path: Path, policy: str) -> None:
    root = ran(tmp_path, policy, "Summarise the journal")
    points = [op_id for op_id in forkable(root)
              if next(o for o in ops(root, "main", first_parent=False) if o.op_id == op_id)
              .parent_session is None]  # the top session's own calls (a child's are forkable too)
    # Midway the conversation was compacted: the call must still be in it (else it is refused).
    top = next(s for s in listing(root) if s.parent_session is None)
    kept = {b["id"] for m in top.messages if m["role"] == "assistant" for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"}
    inside = [op_id for op_id in points if next(o for o in ops(root) if o.op_id == op_id)
              .tool_use_id in kept]
    on_main = [op.op_id for op in ops(root)]
    for op_id in (inside[0], inside[-1]):
        fork = check_fork(root, op_id, policy)
        assert "I summarised 2,048 entries" in json.dumps(fork.messages[-1])
        # Its player went on from its notes (the same results give the same calls), rather
        # than starting the log again from its first entry.
        made = git(root, "rev-list", "--count", "--first-parent", f"main..{fork.branch}")
        assert int(made) == len(on_main) - on_main.index(op_id) - 1


def test_a_fork_whose_notes_the_log_no_longer_holds_rebuilds_them(tmp_path: Path) -> None:
    """A later snapshot replaced the lines that held the player's notes: the fork's player
    rebuilds them from the conversation, deciding again from each reply's results."""
    root = ran(tmp_path, "maze", "Escape the maze")
    [original] = listing(root)
    original._disk = None  # the next save writes a snapshot: the per-step lines are gone
    original.save()
    assert len(original.path.read_bytes().splitlines()) == 1
    fork = check_fork(root, forkable(root)[9], "maze")
    assert "I escaped the maze" in json.dumps(fork.messages[-1])


def test_a_crash_leaves_the_branch_it_found_and_no_session_running(
        tmp_path: Path, fake_api: FakeAnthropic) -> None:
    """The first reply after the fork repeats a tool-use id: its call runs (an op on the fork's
    branch), then the loop's pairing check stops the run as a bug (exit 3). The fork's branch
    keeps that op but is no longer checked out; the session says it crashed. A resume goes to
    the fork's branch, crashes the same way, and goes back."""
    root = tmp_path / "ws"
    assert gitspace_cli(tmp_path, "init", str(root)).returncode == 0
    env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": fake_api.base_url}
    fake_api.reply(tool_use("toolu_1", "create", {"path": "a.md", "file_text": "a\n"}),
                   stop_reason="tool_use")
    fake_api.reply(text("Made a.md."))
    assert gitspace_cli(root, "run", "Make a.", "--model", "m", env=env).returncode == 0
    [made] = [op for op in ops(root) if op.tool == "create"]
    head = git(root, "rev-parse", "HEAD").strip()

    fake_api.reply(tool_use("toolu_1", "create", {"path": "b.md", "file_text": "b\n"}),
                   stop_reason="tool_use")
    crashed = gitspace_cli(root, "run", "--fork", made.op_id, "Make b.", env=env)
    assert crashed.returncode == 3, crashed.stderr
    assert "toolu_1 is used twice" in crashed.stderr
    [fork] = [s for s in listing(root) if s.forked_from]
    assert fork.branch and fork.status == "crashed" and fork.at_branch == fork.branch

    def left_as_found() -> None:
        assert git(root, "branch", "--show-current").strip() == "main"
        assert git(root, "rev-parse", "HEAD").strip() == head
        assert not (root / "b.md").exists()
        assert [op.tool for op in ops(root, fork.branch or "")][-2:] == ["create", "create"]
        assert not [s.id for s in listing(root) if s.status == "running"]
        assert_clean(root)

    left_as_found()
    listed = gitspace_cli(root, "sessions")
    assert "crashed" in listed.stdout, listed.stdout
    again = gitspace_cli(root, "run", "--resume", fork.id, env=env)
    assert again.returncode == 3 and "used twice" in again.stderr, again.stderr
    assert f"to {fork.branch}, where this session stopped" in again.stdout
    left_as_found()
