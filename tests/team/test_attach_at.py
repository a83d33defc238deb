"""``attach --at DIR``: an agent's worktree in a folder of its own, outside ``.git``.

What it must show: the agent works there like in any attached worktree (ops on ``agent/NAME``,
``agents``, ``--agent`` routing, owner checks, merge, detach), the user's checkout stays
byte-for-byte the same, and every bad DIR is refused with nothing changed: a symbolic link, a
folder inside a git directory, inside the user's work tree (unless ignored there), inside another
agent's worktree, an existing folder that is not empty, a second DIR for an attached agent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from user_repo import checkout_state, fsck, gs, make_user_repo, status

import gitspace
from gitspace.core import owner
from gitspace.errors import BadArguments, Conflict, GitspaceError
from gitspace.storage.gitrepo import GitRepo
from gitspace.team import attach, merge


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return make_user_repo(tmp_path / "user")


def everything(user: Path) -> tuple[dict[str, Any], str, str, list[str]]:
    """The user's checkout, their status, every ref and every registered worktree."""
    return (checkout_state(user), status(user), git(user, "for-each-ref"),
            sorted(os.listdir(user / ".git" / "worktrees"))
            if (user / ".git" / "worktrees").is_dir() else [])


def owned(path: Path) -> bool:
    repo = GitRepo.open(path)
    try:
        return owner.owns(repo)
    finally:
        repo.close()


def test_an_agent_at_a_folder_of_its_own_works_like_any_attached_agent(user: Path,
                                                                       tmp_path: Path) -> None:
    git(user, "branch", "review")
    before, listed = checkout_state(user), status(user)
    place = tmp_path / "agents" / "bob"  # its parent does not exist yet: attach makes both
    a = attach.attach(user, "bob", at=place)
    assert (a.path, a.branch, a.existed) == (place, "agent/bob", False)
    assert (place / "notes.txt").read_text() == "one\ntwo\nthree\n"
    assert owned(place) and not owned(user)
    assert attach.route(user, "bob") == place and attach.route(user / "src", "bob") == place
    assert attach.route(place, "eve") == place  # inside the agent's worktree: never rerouted

    with gitspace.open(place, agent="bob") as ws:
        assert ws.call("create", {"path": "plan.md", "file_text": "step 1\n"}).ok
        assert ws.call("str_replace", {"path": "notes.txt", "old_str": "two",
                                       "new_str": "2"}).ok
        assert ws.branch() == "agent/bob"
    assert git(user, "show", "agent/bob:plan.md") == "step 1\n"
    rows = {r.name: r for r in attach.agents(user)}
    assert rows["bob"].path == place and rows["bob"].ops == 2
    assert [r.path for r in attach.agents(place)] == [place]  # the same, listed from inside
    assert attach.attach(user, "bob", at=place).existed  # again, same folder: nothing to do
    assert attach.attach(user, "bob").existed  # without --at: wherever it is
    assert checkout_state(user) == before and status(user) == listed

    attach.attach(user, "eve")
    with pytest.raises(Conflict, match="agent bob's worktree"):  # bob's files are bob's
        merge.merge(user, "eve", into="agent/bob")
    done = merge.merge(user, "bob", into="review")
    assert done.commit is not None and git(user, "show", "review:notes.txt") == "one\n2\nthree\n"
    gone = attach.detach(user, "bob")
    assert gone.path == place and not place.exists()
    assert sorted(os.listdir(user / ".git" / "worktrees")) == ["eve"]
    assert [(r.name, r.path) for r in attach.agents(user)] == [  # bob's branch is kept
        ("bob", None), ("eve", user / ".git" / "gitspace" / "worktrees" / "eve")]
    assert checkout_state(user) == before and status(user) == listed
    fsck(user)


def test_git_worktree_move_keeps_the_agent(user: Path, tmp_path: Path) -> None:
    attach.attach(user, "bob", at=tmp_path / "bob")
    git(user, "worktree", "move", str(tmp_path / "bob"), str(tmp_path / "moved"))
    assert [r.path for r in attach.agents(user)] == [tmp_path / "moved"]
    assert attach.route(user, "bob") == tmp_path / "moved" and owned(tmp_path / "moved")


def test_a_symbolic_link_is_refused(user: Path, tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    before = everything(user)
    for link in (tmp_path / "link", tmp_path / "dangling"):
        with pytest.raises(BadArguments, match="symbolic link"):
            attach.attach(user, "bob", at=link)
    assert everything(user) == before
    assert not (tmp_path / "nowhere").exists() and not any((tmp_path / "real").iterdir())


@pytest.mark.parametrize("where", [".git/agents/bob", ".git/gitspace/worktrees/x",
                                   "elsewhere/.git/bob"])
def test_a_folder_inside_a_git_directory_is_refused(user: Path, tmp_path: Path,
                                                    where: str) -> None:
    base = user if where.startswith(".git") else tmp_path
    before = everything(user)
    with pytest.raises(BadArguments, match="inside a git directory") as caught:
        attach.attach(user, "bob", at=base / where)
    assert caught.value.hint and "leave out --at" in caught.value.hint
    assert everything(user) == before and not (base / where).exists()


def test_a_folder_in_your_work_tree_only_when_ignored_there(user: Path, tmp_path: Path) -> None:
    (tmp_path / "way-in").symlink_to(user / "src")  # a link among the parents is followed
    before = everything(user)
    for inside in (user / "agents" / "bob", user / "src" / "bob", user, user / "new.txt",
                   tmp_path / "way-in" / "bob"):
        with pytest.raises(BadArguments, match="inside your work tree"):
            attach.attach(user, "bob", at=inside)
    assert everything(user) == before
    # build/ is ignored by the user's .gitignore: the agent may live there, unseen by status
    # (only 'git status --ignored' lists it, as an ignored folder).
    def plain_status() -> str:
        return git(user, "--no-optional-locks", "status", "--porcelain", "--untracked-files=all")

    listed, index = plain_status(), (user / ".git" / "index").read_bytes()
    a = attach.attach(user, "bob", at=user / "build" / "bob")
    assert a.path == user / "build" / "bob" and plain_status() == listed
    with gitspace.open(a.path, agent="bob") as ws:
        assert ws.call("create", {"path": "x.txt", "file_text": "x\n"}).ok
    assert plain_status() == listed and git(user, "show", "agent/bob:x.txt") == "x\n"
    assert (user / ".git" / "index").read_bytes() == index and "!! build/bob/" in status(user)
    # ... but never inside another agent's worktree.
    with pytest.raises(Conflict, match="agent bob's worktree"):
        attach.attach(user, "eve", at=a.path / "eve")
    with pytest.raises(Conflict, match="agent bob's worktree"):
        attach.attach(user, "eve", at=a.path / "sub" / "eve")


def test_an_existing_folder_must_be_empty(user: Path, tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.txt").write_text("the user's\n")
    (tmp_path / "a-file").write_text("a file\n")
    before = everything(user)
    for place in (full, tmp_path / "a-file"):
        with pytest.raises(Conflict, match="exists and is not an empty folder"):
            attach.attach(user, "bob", at=place)
    assert everything(user) == before
    assert (full / "mine.txt").read_text() == "the user's\n" and sorted(os.listdir(full)) == [
        "mine.txt"]
    (tmp_path / "empty").mkdir()
    assert attach.attach(user, "bob", at=tmp_path / "empty").path == tmp_path / "empty"


def test_a_second_folder_for_an_attached_agent_is_refused(user: Path, tmp_path: Path) -> None:
    first = attach.attach(user, "bob", at=tmp_path / "one")
    before = everything(user)
    with pytest.raises(Conflict, match="already attached, with its worktree at") as caught:
        attach.attach(user, "bob", at=tmp_path / "two")
    assert caught.value.hint and "detach" in caught.value.hint
    assert not (tmp_path / "two").exists() and everything(user) == before
    # An agent attached inside .git cannot be moved out by attaching it again either.
    attach.attach(user, "eve")
    with pytest.raises(Conflict, match="already attached"):
        attach.attach(user, "eve", at=tmp_path / "three")
    # Another agent at the same folder: refused (it is not empty).
    with pytest.raises(Conflict):
        attach.attach(user, "zed", at=first.path)
    assert {r.name: r.path for r in attach.agents(user)} == {
        "bob": first.path, "eve": user / ".git" / "gitspace" / "worktrees" / "eve"}


def test_detach_refuses_unrecorded_changes_in_a_folder_of_its_own(user: Path,
                                                                  tmp_path: Path) -> None:
    a = attach.attach(user, "bob", at=tmp_path / "bob")
    (a.path / "scratch.txt").write_text("not recorded\n")
    (a.path / "notes.txt").write_text("changed, not recorded\n")
    with pytest.raises(Conflict, match="notes.txt, scratch.txt") as caught:
        attach.detach(user, "bob")
    assert caught.value.hint and "snapshot" in caught.value.hint
    assert (a.path / "scratch.txt").read_text() == "not recorded\n"
    assert attach.find(GitRepo.open(user), "bob") is not None
    with gitspace.open(a.path) as ws:
        assert ws.snapshot().op
    attach.detach(user, "bob")
    assert not a.path.exists() and git(user, "show", "agent/bob:scratch.txt") == "not recorded\n"
    b = attach.attach(user, "eve", at=tmp_path / "eve")
    (b.path / "README.md").write_text("thrown away\n")
    assert attach.detach(user, "eve", force=True).discarded == ["README.md"]
    assert not b.path.exists()


def test_a_crash_before_the_mark_is_finished_by_attaching_again(user: Path,
                                                                tmp_path: Path) -> None:
    a = attach.attach(user, "bob", at=tmp_path / "bob")
    marks = list((user / ".git" / "worktrees").glob("*/gitspace/agent"))
    assert [m.read_text() for m in marks] == ["bob\n"]
    marks[0].unlink()  # as if killed between 'git worktree add' and the mark
    assert not owned(a.path) and [r.path for r in attach.agents(user)] == [None]
    again = attach.attach(user, "bob", at=tmp_path / "bob")
    assert again.existed and owned(a.path) and attach.route(user, "bob") == a.path


def test_a_mark_in_the_main_checkouts_git_dir_means_nothing(user: Path) -> None:
    (user / ".git" / "gitspace").mkdir()
    (user / ".git" / "gitspace" / "agent").write_text("bob\n")
    assert not owned(user)
    with pytest.raises(GitspaceError):
        attach.route(user, "bob")


def test_cli_attach_at(user: Path, tmp_path: Path) -> None:
    before, listed = checkout_state(user), status(user)
    place = tmp_path / "bob-wt"
    out = gs(user, "attach", "--agent", "bob", "--at", str(place))
    assert out.returncode == 0 and str(place) in out.stdout, out.stderr
    out = gs(user, "--agent", "bob", "call", "create", "--args",
             '{"path": "cli.txt", "file_text": "x\\n"}')
    assert out.returncode == 0, out.stderr
    assert (place / "cli.txt").read_text() == "x\n" and not (user / "cli.txt").exists()
    rows = json.loads(gs(user, "agents", "--json").stdout)
    assert [(r["agent"], r["ops"], r["path"]) for r in rows] == [("bob", 1, str(place))]
    out = gs(user, "attach", "--agent", "eve", "--at", str(user / ".git" / "eve"))
    assert out.returncode == 1 and "inside a git directory" in out.stderr
    out = gs(user, "attach", "--agent", "eve", "--at", "")
    assert out.returncode == 1 and "--at needs a folder" in out.stderr, out.stderr
    out = gs(user, "detach", "bob")
    assert out.returncode == 0 and not place.exists(), out.stderr
    assert checkout_state(user) == before and status(user) == listed
    assert "eve" not in git(user, "branch", "--list", "agent/*")
