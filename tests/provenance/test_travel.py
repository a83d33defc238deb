"""provenance/travel.py: the notes go with the person's push (the pre-push hook), a clone gets
them the documented way, and the notes of several people merge without loss."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from authored import agent_writes, by_line, checkout, gs, person

from gitspace.provenance import authorship, travel


@pytest.fixture
def shared(tmp_path: Path) -> tuple[Path, Path]:
    """A bare remote, and Zoë's checkout of it with one noted commit pushed."""
    bare = tmp_path / "remote.git"
    person(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    root = checkout(tmp_path, "zoe")
    person(root, "remote", "add", "origin", str(bare))
    agent_writes(root, "src/new.py", "x = 1\n", "toolu_1")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "agent work")
    done = person(root, "push", "-q", "origin", "main")
    assert "gitspace" not in done.stderr
    return bare, root


def test_a_push_sends_the_notes_and_a_clone_reads_them_the_documented_way(
        shared: tuple[Path, Path], tmp_path: Path) -> None:
    bare, root = shared
    assert person(bare, "rev-parse", "refs/notes/ai").stdout.strip() == \
        person(root, "rev-parse", "refs/notes/ai").stdout.strip()
    clone = tmp_path / "clone"
    person(tmp_path, "clone", "-q", str(bare), str(clone))
    person(clone, "fetch", "-q", "origin", "refs/notes/ai:refs/notes/ai")  # docs/provenance.md
    assert by_line(clone, "HEAD", "src/new.py") == {"x = 1": "agent:Write"}
    blamed = json.loads(gs(clone, "blame", "src/new.py", "--json").stdout)
    assert blamed[0]["kind"] == "agent" and blamed[0]["tool"] == "Write"
    assert blamed[0]["source"] == "note" and blamed[0]["prompt"] is None  # no transcript here
    # A second push with no new note asks nothing of the notes: nothing moved there.
    before = person(bare, "rev-parse", "refs/notes/ai").stdout
    (root / "README").write_text("typed\n")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "no agent here")
    person(root, "push", "-q", "origin", "main")
    assert person(bare, "rev-parse", "refs/notes/ai").stdout == before


def test_the_notes_of_two_people_merge_without_loss(shared: tuple[Path, Path],
                                                    tmp_path: Path) -> None:
    bare, zoe = shared
    ann = checkout(tmp_path, "ann")
    person(ann, "remote", "add", "origin", str(bare))
    person(ann, "fetch", "-q", "origin")
    person(ann, "reset", "-q", "--hard", "origin/main")
    gs(ann, "hooks", "install", "claude-code")
    agent_writes(ann, "src/ann.py", "a = 1\n", "toolu_a")
    person(ann, "add", ".")
    person(ann, "commit", "-q", "-m", "ann's agent work")
    agent_writes(zoe, "src/zoe.py", "z = 1\n", "toolu_z")
    person(zoe, "add", ".")
    person(zoe, "commit", "-q", "-m", "zoe's agent work")
    person(zoe, "push", "-q", "origin", "main")
    # Ann's branch push is refused (not a fast-forward); her notes went, merged with Zoë's.
    assert person(ann, "push", "-q", "origin", "main", check=False).returncode != 0
    person(ann, "pull", "-q", "--rebase", "origin", "main")
    person(ann, "push", "-q", "origin", "main")
    clone = tmp_path / "clone"
    person(tmp_path, "clone", "-q", str(bare), str(clone))
    person(clone, "fetch", "-q", "origin", "refs/notes/ai:refs/notes/ai")
    assert by_line(clone, "HEAD", "src/ann.py") == {"a = 1": "agent:Write"}
    assert by_line(clone, "HEAD~1", "src/zoe.py") == {"z = 1": "agent:Write"}
    assert by_line(clone, "HEAD~2", "src/new.py") == {"x = 1": "agent:Write"}
    # gitspace notes fetch merges theirs into a clone that has notes of its own.
    agent_writes(zoe, "src/later.py", "l = 1\n", "toolu_l")
    person(zoe, "add", ".")
    person(zoe, "commit", "-q", "-m", "later")
    gs(zoe, "notes", "fetch")
    person(zoe, "pull", "-q", "--rebase", "origin", "main")
    assert by_line(zoe, "HEAD", "src/later.py") == {"l = 1": "agent:Write"}
    assert by_line(zoe, "HEAD~1", "src/ann.py") == {"a = 1": "agent:Write"}


def test_two_notes_of_one_commit_merge_keeping_both_claims() -> None:
    key_a, key_b = "s_aaaaaaaaaaaaaa::t_aaaaaaaaaaaaaa", "s_bbbbbbbbbbbbbb::t_bbbbbbbbbbbbbb"
    ours = authorship.Note("c", {"a.py": {key_a: [(1, 3)]}},
                           sessions={"s_aaaaaaaaaaaaaa": {"agent_id": {"tool": "claude"}}})
    theirs = authorship.Note("c", {"a.py": {key_b: [(2, 6)]}, "b.py": {key_b: [(1, 1)]}},
                             sessions={"s_bbbbbbbbbbbbbb": {"agent_id": {"tool": "codex"}}})
    merged = travel.merge_notes(ours, theirs)
    assert merged.files == {"a.py": {key_a: [(1, 3)], key_b: [(4, 6)]}, "b.py": {key_b: [(1, 1)]}}
    assert set(merged.sessions) == {"s_aaaaaaaaaaaaaa", "s_bbbbbbbbbbbbbb"}


def test_gitspace_push_and_sync_carry_the_notes_of_each_clone(tmp_path: Path) -> None:
    import gitspace

    bare = tmp_path / "remote.git"
    person(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    clones = []
    for name in ("one", "two"):
        root = tmp_path / name
        if not clones:
            with gitspace.init(root, agent=name) as ws:
                assert ws.call("create", {"path": f"{name}.txt", "file_text": "x\n"}).ok
            person(root, "remote", "add", "origin", str(bare))
            gs(root, "push", "origin")
        else:
            person(tmp_path, "clone", "-q", str(bare), str(root))
        clones.append(root)
    for root in clones:
        with gitspace.open(root, agent=root.name) as ws:
            assert ws.call("create", {"path": f"{root.name}-2.txt", "file_text": "y\n"}).ok
        person(root, "notes", "--ref=ai", "add", "-m", authorship.dump(authorship.Note(
            "", {f"{root.name}-2.txt": {"h_31dce776f88375": [(1, 1)]}})).rstrip("\n"), "HEAD")
        gs(root, "sync")
    gs(clones[0], "sync")
    remote_notes = person(bare, "notes", "--ref=ai", "list").stdout.splitlines()
    assert len(remote_notes) == 2, "both clones' notes are on the remote"
    assert len(person(clones[0], "notes", "--ref=ai", "list").stdout.splitlines()) == 2
