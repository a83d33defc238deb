"""provenance/keep.py: ``gitspace gc`` prunes a line only once the person's commits absorbed every
op on it, and only once every commit that absorbed it carries its note. The cases a new user hit:
a Write of ``.env`` taken back, a rewind, a file the agent made that the person removed, a line
whose commits are not the branch's ancestors; and commits without their note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from authored import agent_edits, agent_writes, by_line, checkout, gs, note, person
from hookcalls import payload, run_hook

from gitspace.harness.inplace import gc as linegc
from gitspace.storage.gitrepo import GitRepo

LINE = "refs/gitspace/lines/main"


def planned(root: Path) -> list[str]:
    repo = GitRepo.open(root)
    try:
        return [p.ref for p in linegc.plan(repo)]
    finally:
        repo.close()


def last_op(root: Path, tool: str) -> str:
    entries = json.loads(gs(root, "log", "--json").stdout)
    return next(e["op"]["id"] for e in entries if e["op"] and e["op"]["tool"] == tool)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = checkout(tmp_path)
    agent_writes(root, "src/kept.py", "k = 1\n", "toolu_k")
    return root


def test_a_write_taken_back_is_no_op_a_commit_absorbed(root: Path) -> None:
    agent_writes(root, ".env", "TOKEN=hunter2hunter2\n", "toolu_env")
    gs(root, "undo", "--op", last_op(root, "Write"))
    assert not (root / ".env").exists()
    person(root, "add", "src/kept.py")
    person(root, "commit", "-q", "-m", "take the agent's file")
    assert planned(root) == []
    assert LINE in person(root, "for-each-ref").stdout


def test_a_rewind_is_no_op_a_commit_absorbed(root: Path) -> None:
    gs(root, "hooks", "install", "claude-code")  # (a turn's end marks where to rewind to)
    agent_edits(root, "src/app.py", "hi", "changed", "toolu_e")
    gs(root, "rewind", last_op(root, "Write"))
    person(root, "add", "src/kept.py")
    person(root, "commit", "-q", "-m", "take the agent's file")
    assert planned(root) == []


def test_a_file_the_agent_made_and_the_person_removed_was_never_absorbed(root: Path) -> None:
    agent_writes(root, "notes.txt", "the agent's notes\n", "toolu_n")
    (root / "notes.txt").unlink()
    code, err = run_hook(payload(root, "Stop"))  # the turn's end: its scan records the removal
    assert code == 0 and "notes.txt" not in person(root, "ls-tree", "-r", LINE).stdout, err
    person(root, "add", "src")
    person(root, "commit", "-q", "-m", "the agent's code, not its notes")
    assert planned(root) == []


def test_a_branch_that_is_not_the_lines_descendant_absorbed_nothing(root: Path) -> None:
    person(root, "switch", "-q", "--orphan", "elsewhere")
    person(root, "add", "src")
    person(root, "commit", "-q", "-m", "the same files in an unrelated history")
    person(root, "switch", "-q", "main")
    person(root, "reset", "-q", "--hard", "elsewhere")
    assert planned(root) == []


def test_gc_writes_the_note_an_absorbing_commit_lacks_before_it_prunes(root: Path) -> None:
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "take the agent's file")
    commit = person(root, "rev-parse", "HEAD").stdout.strip()
    person(root, "notes", "--ref=ai", "remove", commit)  # as if made before the hooks were in
    assert note(root) is None and planned(root) == [LINE]
    done = gs(root, "gc")
    assert f"pruned {LINE}" in done.stdout
    assert LINE not in person(root, "for-each-ref").stdout
    assert by_line(root, commit, "src/kept.py") == {"k = 1": "agent:Write"}
    # And blame still says so, from the note alone.
    assert json.loads(gs(root, "blame", "src/kept.py", "--json").stdout)[0]["tool"] == "Write"
