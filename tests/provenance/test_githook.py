"""provenance/githook.py through git's own hooks: the note of every commit a person makes with
plain git (commit, amend, rebase across upstream changes, cherry-pick, merge --squash) is there
when the command returns, and attributes each line where it now is. Real git, real hooks, the
agent's calls through Claude Code's hook entry point.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from authored import PERSON, agent_edits, agent_writes, by_line, checkout, gs, note, person

from gitspace.provenance import authorship


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = checkout(tmp_path)
    agent_writes(root, "src/new.py", "x = 1\ny = 2\n", "toolu_w1")
    agent_edits(root, "src/app.py", "    print('hi')\n", "    print('hello')\n    return 0\n",
                "toolu_e1")
    (root / "src" / "new.py").write_text("x = 1\ny = 2\nz = 3  # typed by the person\n")
    return root


def test_a_plain_commit_says_which_call_wrote_each_line(repo: Path) -> None:
    person(repo, "add", ".")
    done = person(repo, "commit", "-q", "-m", "the person commits")
    assert done.stdout == "" and done.stderr == "", "the hooks say nothing"
    assert by_line(repo, "HEAD", "src/new.py") == {"x = 1": "agent:Write", "y = 2": "agent:Write",
                                                  "z = 3  # typed by the person": "person"}
    assert by_line(repo, "HEAD", "src/app.py") == {"def main():": None,
                                                  "    print('hello')": "agent:Edit",
                                                  "    return 0": "agent:Edit"}
    found = note(repo)
    assert found is not None and found.base == person(repo, "rev-parse", "HEAD").stdout.strip()
    assert found.humans[PERSON] == {"author": "Zoë van Dijk <zoe@example.invalid>"}
    [session] = found.sessions.values()
    assert session["agent_id"]["tool"] == "claude" and session["human_author"] == \
        "Zoë van Dijk <zoe@example.invalid>"
    assert {t["tool_use_id"] for t in found.traces.values()} == {"toolu_w1", "toolu_e1"}


def test_amend_rebase_cherry_pick_and_squash_carry_each_line_where_it_now_is(repo: Path) -> None:
    person(repo, "add", ".")
    person(repo, "commit", "-q", "-m", "the person commits")
    (repo / "src" / "app.py").write_text((repo / "src" / "app.py").read_text() + "# amended\n")
    person(repo, "commit", "-q", "-a", "--amend", "--no-edit")
    amended = by_line(repo, "HEAD", "src/app.py")
    assert amended["    return 0"] == "agent:Edit" and amended["# amended"] == "person"
    # Upstream puts two lines at the top: the agent's lines move down two.
    person(repo, "switch", "-q", "-c", "upstream", "HEAD~1")
    (repo / "src" / "app.py").write_text("# one\n# two\ndef main():\n    print('hi')\n")
    person(repo, "commit", "-q", "-a", "-m", "upstream header")
    person(repo, "switch", "-q", "main")
    person(repo, "rebase", "-q", "upstream")
    rebased = by_line(repo, "HEAD", "src/app.py")
    assert rebased == {"# one": None, "# two": None, "def main():": None,
                       "    print('hello')": "agent:Edit", "    return 0": "agent:Edit",
                       "# amended": "person"}
    assert authorship.covers(note(repo).files["src/app.py"][  # type: ignore[union-attr]
        next(k for k in note(repo).files["src/app.py"] if k.startswith("s_"))], 4)  # type: ignore[union-attr]
    person(repo, "switch", "-q", "-c", "picked", "upstream")
    person(repo, "cherry-pick", "main")
    assert by_line(repo, "HEAD", "src/app.py") == rebased
    assert by_line(repo, "HEAD", "src/new.py")["y = 2"] == "agent:Write"
    person(repo, "switch", "-q", "-c", "squashed", "upstream")
    person(repo, "merge", "-q", "--squash", "main")
    person(repo, "commit", "-q", "-m", "squashed")
    assert by_line(repo, "HEAD", "src/app.py") == rebased
    assert by_line(repo, "HEAD", "src/new.py")["z = 3  # typed by the person"] == "person"


def test_an_agents_line_committed_later_is_still_the_agents(repo: Path) -> None:
    person(repo, "add", "src/app.py")
    person(repo, "commit", "-q", "-m", "only app.py")
    assert by_line(repo, "HEAD", "src/app.py")["    return 0"] == "agent:Edit"
    person(repo, "add", "src/new.py")
    person(repo, "commit", "-q", "-m", "then new.py")
    assert by_line(repo, "HEAD", "src/new.py")["x = 1"] == "agent:Write"


def test_a_commit_with_no_agents_line_gets_no_note(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    (root / "typed.txt").write_text("by hand\n")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "mine")
    assert note(root) is None


def test_an_aborted_rebase_writes_no_note(repo: Path) -> None:
    person(repo, "add", ".")
    person(repo, "commit", "-q", "-m", "the person commits")
    before = person(repo, "rev-parse", "refs/notes/ai").stdout
    person(repo, "switch", "-q", "-c", "upstream", "HEAD~1")
    (repo / "src" / "app.py").write_text("conflicting\n")
    person(repo, "commit", "-q", "-a", "-m", "conflict")
    person(repo, "switch", "-q", "main")
    assert person(repo, "rebase", "upstream", check=False).returncode != 0
    person(repo, "rebase", "--abort")
    assert person(repo, "rev-parse", "refs/notes/ai").stdout == before


def test_a_note_that_cannot_be_written_now_is_written_by_the_next_hook(repo: Path) -> None:
    from gitspace.core.writer import hold_lock
    from gitspace.provenance import githook

    githook.WAIT  # noqa: B018  (the hook waits this long; the lock below outlasts it)
    with hold_lock(repo / ".git", 1.0):
        started = time.monotonic()
        person(repo, "add", "src/app.py")
        person(repo, "commit", "-q", "-m", "while an agent's hook holds the lock")
        assert time.monotonic() - started >= githook.WAIT * 0.9
    first = person(repo, "rev-parse", "HEAD").stdout.strip()
    assert note(repo) is None
    assert (repo / ".git" / "gitspace" / "provenance" / "pending" / f"{first}.json").exists()
    person(repo, "add", "src/new.py")
    person(repo, "commit", "-q", "-m", "the next commit")
    assert by_line(repo, first, "src/app.py")["    return 0"] == "agent:Edit"
    assert by_line(repo, "HEAD", "src/new.py")["x = 1"] == "agent:Write"
    assert not list((repo / ".git" / "gitspace" / "provenance" / "pending").iterdir())


def test_gc_writes_the_notes_still_queued_before_it_prunes(repo: Path) -> None:
    from gitspace.core.writer import hold_lock

    (repo / "src" / "new.py").write_text("x = 1\ny = 2\n")  # all the agent's: gc may prune
    with hold_lock(repo / ".git", 1.0):
        person(repo, "add", ".")
        person(repo, "commit", "-q", "-m", "while the lock is held")
    assert note(repo) is None
    done = gs(repo, "gc")
    assert "pruned refs/gitspace/lines/main" in done.stdout
    assert by_line(repo, "HEAD", "src/new.py")["y = 2"] == "agent:Write"
