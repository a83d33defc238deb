"""What in-place recording leaves in ``.git`` is something every git tool reads, and keeps to
itself: libgit2 (pygit2) and dulwich walk every ref to a commit, ``git gc``, ``git fsck --strict``
and ``git log --all`` take it, ``git branch`` and branch pickers never list it, and no ``git
push`` (``--all``, ``--tags``, the default) nor ``gitspace push`` publishes a line or a turn mark
unless it is named. ``gitspace gc`` prunes lines the person's commits absorbed, or that nothing
was recorded on for too long."""

from __future__ import annotations

import sys
from pathlib import Path

import dulwich.repo
import pygit2
import pytest
from conftest import git, git_run
from hookcalls import call, own_repo, payload, run_hook, write

from gitspace.harness import install
from gitspace.harness.inplace import gc as linegc

PROGRAM = f"{sys.executable} -m gitspace"


@pytest.fixture
def user(tmp_path: Path) -> Path:
    root = own_repo(tmp_path / "repo")
    install.install("claude-code", None, root, tmp_path / "home", PROGRAM)
    call(root, "Write", {"file_path": str(root / "agent.txt"), "content": "a\n"}, "toolu_1",
         write(root, "agent.txt", "a\n"))
    assert run_hook(payload(root, "Stop"))[0] == 0  # a turn mark
    git(root, "switch", "-q", "-c", "feature")
    call(root, "Write", {"file_path": str(root / "f.txt"), "content": "f\n"}, "toolu_2",
         write(root, "f.txt", "f\n"))
    git(root, "switch", "-q", "main")
    return root


def ours(root: Path) -> dict[str, str]:
    out = git(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/gitspace")
    return dict(line.split() for line in out.splitlines())  # type: ignore[misc]


def test_every_ref_names_a_commit_and_other_clients_read_them(user: Path) -> None:
    refs = ours(user)
    assert {"refs/gitspace/lines/main", "refs/gitspace/lines/feature"} <= set(refs)
    assert any(r.startswith("refs/gitspace/turns/claude-code-") for r in refs)
    for ref in refs:
        assert git(user, "cat-file", "-t", ref).strip() == "commit", ref
    libgit2 = pygit2.Repository(str(user))
    for name in libgit2.references:  # what a libgit2 client's "browse references" does
        target = libgit2.references[name].peel(pygit2.Commit)
        assert isinstance(target, pygit2.Commit)
    assert set(refs) <= set(libgit2.references)
    with dulwich.repo.Repo(str(user)) as repo:
        for name, sha in repo.get_refs().items():
            obj = repo[sha]
            while obj.type_name == b"tag":
                obj = repo[obj.object[1]]
            assert obj.type_name == b"commit", name
        assert {r.encode() for r in refs} <= set(repo.get_refs())
    assert "gitspace" not in git(user, "branch", "--all", "--list")
    assert git(user, "rev-parse", "refs/gitspace/lines/main") in git(user, "log", "--all",
                                                                     "--format=%H")
    assert git_run(user, "fsck", "--strict", "--no-progress").returncode == 0
    assert git_run(user, "gc", "-q").returncode == 0
    assert ours(user) == refs, "git gc keeps the lines (packed refs are still refs)"
    assert git_run(user, "fsck", "--strict", "--no-progress").returncode == 0


def test_no_push_publishes_a_line_unless_it_is_named(user: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(user, "remote", "add", "origin", str(remote))
    for args in (("push", "-q", "origin", "main"), ("push", "-q", "--all", "origin"),
                 ("push", "-q", "--tags", "origin"), ("push", "-q", "--follow-tags", "origin",
                                                      "main")):
        git(user, *args)
    proc = git_run(user, "-c", "push.default=matching", "push", "-q", "origin")
    assert proc.returncode == 0, proc.stderr
    theirs = git(remote, "for-each-ref", "--format=%(refname)")
    assert "refs/gitspace" not in theirs and "refs/heads/main" in theirs
    from user_repo import gs

    done = gs(user, "push", "origin")
    assert done.returncode == 0, done.stderr
    assert "refs/gitspace" not in git(remote, "for-each-ref", "--format=%(refname)")
    git(user, "push", "-q", "origin", "refs/gitspace/lines/main:refs/gitspace/lines/main")
    assert "refs/gitspace/lines/main" in git(remote, "for-each-ref", "--format=%(refname)")


def test_gc_prunes_what_your_commits_absorbed_and_what_is_too_old(user: Path) -> None:
    assert linegc.plan(user_repo(user)) == []  # the agent's files are not committed yet
    git(user, "switch", "-q", "feature")
    git(user, "add", "f.txt", "agent.txt")
    git(user, "commit", "-q", "-m", "take the agent's work")
    git(user, "switch", "-q", "main")
    repo = user_repo(user)
    planned = linegc.plan(repo)
    assert [p.ref for p in planned] == ["refs/gitspace/lines/feature"]
    done = gs_ok(user, "gc")
    assert "pruned refs/gitspace/lines/feature (absorbed by feature" in done
    assert "refs/gitspace/lines/feature" not in ours(user)
    assert "refs/gitspace/lines/main" in ours(user)
    assert linegc.plan(user_repo(user), keep_days=0.0)[0].ref == "refs/gitspace/lines/main"
    gs_ok(user, "gc", "--keep-days", "0")
    assert not [r for r in ours(user) if not r.startswith("refs/gitspace/turns/")] \
        and not ours(user), "the turn mark went with its line"
    # Recording goes on: the next call starts the line again.
    call(user, "Write", {"file_path": str(user / "after.txt"), "content": "x\n"}, "toolu_3",
         write(user, "after.txt", "x\n"))
    assert "refs/gitspace/lines/main" in ours(user)
    assert git_run(user, "fsck", "--strict", "--no-progress").returncode == 0


def test_the_line_you_are_on_starts_again_once_gc_pruned_it(user: Path) -> None:
    git(user, "add", "agent.txt")
    git(user, "commit", "-q", "-m", "take the agent's file")
    assert [p.ref for p in linegc.plan(user_repo(user))] == ["refs/gitspace/lines/main"]
    gs_ok(user, "gc")
    assert "refs/gitspace/lines/main" not in ours(user)
    call(user, "Write", {"file_path": str(user / "next.txt"), "content": "n\n"}, "toolu_4",
         write(user, "next.txt", "n\n"))
    fresh = git(user, "log", "--format=%s", "refs/gitspace/lines/main").splitlines()
    assert fresh[1].startswith("follow branch main")
    assert git(user, "rev-parse", "refs/gitspace/lines/main~2").strip() == git(
        user, "rev-parse", "main").strip()
    assert git(user, "diff-tree", "--name-only", "-r", "--no-commit-id",
               "refs/gitspace/lines/main").split() == ["next.txt"]


def user_repo(root: Path):  # type: ignore[no-untyped-def]
    from gitspace.storage.gitrepo import GitRepo

    return GitRepo.open(root)


def gs_ok(root: Path, *args: str) -> str:
    from user_repo import gs

    proc = gs(root, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_background_pass_runs_once_a_day_from_a_day_after_recording_began(
        user: Path) -> None:
    import time

    repo = user_repo(user)
    assert not linegc.due(repo)  # a turn's end already started the clock (the fixture's Stop)
    marker = user / ".git" / "gitspace" / "inplace" / "gc"
    assert marker.exists()
    assert linegc.due(repo, now=time.time() + linegc.AUTO_EVERY + 1)
    out = gs_ok(user, "gc", "--auto")
    assert out == ""  # not due: it says nothing and changes nothing
    import os

    os.utime(marker, (time.time() - 2 * linegc.AUTO_EVERY,) * 2)
    assert "Packed the objects recording wrote." in gs_ok(user, "gc", "--auto")
    assert not linegc.due(repo)
