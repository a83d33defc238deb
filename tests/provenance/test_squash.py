"""provenance/squash.py: ``gitspace merge --squash`` leaves the note on the squash commit, and the
note of a squash a host made (a merged pull request) is attached from the commits it joined."""

from __future__ import annotations

from pathlib import Path

from authored import agent_writes, by_line, checkout, gs, note, person
from conftest import git
from user_repo import make_user_repo

import gitspace
from gitspace.team import attach, merge


def test_gitspace_merge_squash_notes_which_op_wrote_each_line(tmp_path: Path) -> None:
    root = make_user_repo(tmp_path / "user")
    place = attach.attach(root, "bob").path
    with gitspace.open(place, agent="bob", session="s-1") as ws:
        assert ws.call("create", {"path": "bob.txt", "file_text": "one\ntwo\n"}).ok
        assert ws.call("str_replace", {"path": "bob.txt", "old_str": "two",
                                       "new_str": "TWO"}).ok
    (place / "typed.txt").write_text("by the person, in bob's worktree\n")
    with gitspace.open(place, agent="bob") as ws:
        assert ws.snapshot().ok
    git(root, "switch", "-q", "-c", "side")
    done = merge.merge(root, "bob", into="side", squash=True)
    assert done.squashed and done.commit is not None
    lines = by_line(root, done.commit, "bob.txt")
    assert lines == {"one": "agent:create", "TWO": "agent:str_replace"}
    found = note(root, done.commit)
    assert found is not None and found.base == done.commit
    assert {s["agent_id"]["tool"] for s in found.sessions.values()} == {"gitspace"}
    assert {t["agent"] for t in found.traces.values()} == {"bob"}
    assert set(by_line(root, done.commit, "typed.txt").values()) == {"person:" + next(
        k for k in found.files["typed.txt"])}


def test_a_squash_the_host_made_gets_the_note_of_the_commits_it_joined(tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    person(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    root = checkout(tmp_path, "zoe")
    person(root, "remote", "add", "origin", str(bare))
    person(root, "push", "-q", "origin", "main")
    person(root, "switch", "-q", "-c", "feature")
    agent_writes(root, "src/f.py", "f = 1\n", "toolu_f")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "feature: the agent's part")
    (root / "src" / "g.py").write_text("g = 1\n")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "feature: mine")
    person(root, "push", "-q", "origin", "feature")
    # The host squashes the pull request on main (a commit no hook of anyone's saw).
    ci = tmp_path / "ci"
    person(tmp_path, "clone", "-q", str(bare), str(ci))
    tree = person(ci, "rev-parse", "origin/feature^{tree}").stdout.strip()
    squash = person(ci, "commit-tree", tree, "-p", "origin/main", "-m",
                    "Feature (#1)\n\n* feature: the agent's part\n\n* feature: mine").stdout.strip()
    person(ci, "push", "-q", "origin", f"{squash}:refs/heads/main")
    person(ci, "fetch", "-q", "origin")
    gs(ci, "notes", "fetch")
    attached = gs(ci, "notes", "attach", squash)
    assert "from 2 commit(s)" in attached.stdout
    assert by_line(ci, squash, "src/f.py") == {"f = 1": "agent:Write"}
    # (a commit of the person's alone has no note: its lines stay unattested, as the standard's
    # "untracked", not guessed to be the squash's author's)
    assert by_line(ci, squash, "src/g.py") == {"g = 1": None}
    # The branch gone (deleted after the merge): the message's subjects still name the noted one.
    person(ci, "notes", "--ref=ai", "remove", squash)
    person(ci, "update-ref", "-d", "refs/remotes/origin/feature")
    assert "from 1 commit(s)" in gs(ci, "notes", "attach", squash).stdout
    assert by_line(ci, squash, "src/f.py") == {"f = 1": "agent:Write"}
