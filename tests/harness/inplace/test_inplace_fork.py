"""harness/inplace/fork.py: a fork in a person's own checkout takes back the agent's later ops on
the line, merged with the person's own recorded changes since, and nothing else of theirs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from claude_session import Session
from conftest import git, gitspace_cli, ops
from user_repo import make_user_repo, users_own

LINE = "refs/gitspace/lines/main"


@pytest.fixture
def mine(tmp_path: Path) -> Path:
    user = make_user_repo(tmp_path / "repo")
    assert gitspace_cli(user, "hooks", "install", "claude-code").returncode == 0
    return user


def session(root: Path, home: Path) -> Session:
    """w1 writes a.txt, w2 b.txt, w3 changes a.txt's last line."""
    s = Session(root, home)
    s.prompt("go")
    s.write("toolu_w1", "a.txt", "1\n2\n3\n")
    s.write("toolu_w2", "b.txt", "b\n")
    s.write("toolu_w3", "a.txt", "1\n2\nTHREE\n")
    s.stop()
    return s


def op_of(root: Path, use_id: str) -> str:
    return next(op.op_id for op in ops(root, LINE) if op.tool_use_id == use_id)


def fork(root: Path, op: str) -> dict[str, object]:
    out = gitspace_cli(root, "fork", op, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_your_recorded_change_since_stays_and_the_agents_goes(mine: Path, hermetic: Path) -> None:
    s = session(mine, hermetic)
    (mine / "a.txt").write_text("ONE\n2\nTHREE\n")  # the person's, recorded at the next turn
    s.prompt("next turn")
    assert ops(mine, LINE)[-1].source == "external"
    made = fork(mine, op_of(mine, "toolu_w2"))
    assert (mine / "a.txt").read_text() == "ONE\n2\n3\n" and (mine / "b.txt").exists()
    assert made["files"] == ["a.txt"] and made["took_back"] == [op_of(mine, "toolu_w3")]


def test_a_change_of_yours_in_the_same_place_refuses_the_fork(mine: Path, hermetic: Path) -> None:
    s = session(mine, hermetic)
    (mine / "a.txt").write_text("1\n2\nthe person's three\n")
    s.prompt("next turn")
    before, tip = users_own(mine), git(mine, "rev-parse", LINE)
    out = gitspace_cli(mine, "fork", op_of(mine, "toolu_w2"))
    assert out.returncode == 1 and "a.txt changed since in the same places" in out.stderr
    assert users_own(mine) == before and git(mine, "rev-parse", LINE) == tip
    assert len(list(s.transcript.parent.iterdir())) == 1, "no transcript was written"


def test_a_later_fork_takes_back_an_earlier_one(mine: Path, hermetic: Path) -> None:
    session(mine, hermetic)
    first = fork(mine, op_of(mine, "toolu_w1"))
    assert not (mine / "b.txt").exists() and (mine / "a.txt").read_text() == "1\n2\n3\n"
    second = fork(mine, op_of(mine, "toolu_w3"))
    assert second["took_back"] == [first["fork_op"]]
    assert (mine / "b.txt").read_text() == "b\n" and (mine / "a.txt").read_text() == "1\n2\nTHREE\n"
    forks = [op for op in ops(mine, LINE) if op.tool == "fork"]
    assert [op.session for op in forks] == [first["session"], second["session"]]
