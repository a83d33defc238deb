"""harness/inplace/place.py: a call recorded in a person's own checkout is one change of the
writer, which moves the line's ref alone: the person's edit found before it (an ``external`` op
by their git identity) and the call's op (source ``harness``: its agent, session and tool-use
id, from its Identity) move the line once. A failure of that move changes nothing, of theirs or
of the line, and the next call records what it missed.
"""

from __future__ import annotations

import errno
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import git
from hookcalls import LINE, PROGRAM, SID, call, line_ops, own_repo, write
from user_repo import users_own

from gitspace import faults
from gitspace.harness import install


@pytest.fixture
def user(tmp_path: Path) -> Path:
    root = own_repo(tmp_path / "repo")
    install.install("claude-code", None, root, tmp_path / "home", PROGRAM)
    return root


def _edit(user: Path, use_id: str) -> str:
    """The person changes notes.txt, then the agent's Write of it."""
    (user / "notes.txt").write_text("the person's\n")
    return call(user, "Write", {"file_path": str(user / "notes.txt"), "content": "agent\n"},
                use_id, write(user, "notes.txt", "the agent's\n"))


def test_the_persons_edit_and_the_call_move_the_line_once(user: Path) -> None:
    before, start = users_own(user), git(user, "rev-parse", LINE).strip()
    with ExitStack() as stack:
        armed = {p: stack.enter_context(faults.inject(p, times=0))
                 for p in ("journal.write", "ref.update", "index.store", "head.update")}
        _edit(user, "toolu_1")
    assert {p: a.hits for p, a in armed.items()} == {
        "journal.write": 1, "ref.update": 1, "index.store": 0, "head.update": 0}
    made, theirs = line_ops(user)[:2]
    assert (made.tool, made.source, made.agent, made.session, made.tool_use_id, made.paths) == (
        "Write", "harness", "claude-code", SID, "toolu_1", ("notes.txt",))
    assert (theirs.tool, theirs.source, theirs.agent, theirs.args["paths"]) == (
        "external_edit", "external", "Zoe-Tester", ["notes.txt"])
    assert git(user, "rev-parse", f"{LINE}~2").strip() == start
    after = users_own(user)
    for key in ("HEAD", "refs", "index", "index stat", "stash", "tags"):
        assert after[key] == before[key], key


def test_a_failed_move_of_the_line_is_caught_up_by_the_next_call(user: Path) -> None:
    start = git(user, "rev-parse", LINE).strip()
    with faults.inject("ref.update", errno.EIO):
        err = _edit(user, "toolu_1")
    assert "Nothing was changed" in err
    assert git(user, "rev-parse", LINE).strip() == start
    assert not (user / ".git" / "gitspace" / "journal.json").exists()
    call(user, "Bash", {"command": "true"}, "toolu_2")  # it scans first: a call was missed
    assert git(user, "show", f"{LINE}:notes.txt") == "the agent's\n"
    assert git(user, "rev-parse", LINE).strip() != start
