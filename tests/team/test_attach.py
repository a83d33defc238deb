"""Agents on an existing repository: the user's checkout is the same, byte for byte, throughout.

The user's repository here is made with plain git and has everything a real checkout has at
once: a staged change, an unstaged change, an untracked file and ignored files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git
from user_repo import checkout_state, fsck, gs, index_entries, make_user_repo, status

import gitspace
from gitspace import faults
from gitspace.errors import Conflict, GitspaceError, NotFound
from gitspace.team import attach, merge


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return make_user_repo(tmp_path / "user")


def side_branch(root: Path, name: str, path: str, text: str) -> str:
    """A branch off main with one commit changing ``path``, made without touching the checkout."""
    blob = git(root, "hash-object", "-w", "--stdin", input=text.encode()).strip()
    env_index = root / ".git" / f"tmp-index-{name}"
    env = {"GIT_INDEX_FILE": str(env_index)}
    run = {**os.environ, **env}
    subprocess.run(["git", "read-tree", "main"], cwd=root, env=run, check=True)
    subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}"],
                   cwd=root, env=run, check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=root, env=run, check=True,
                          capture_output=True, text=True).stdout.strip()
    env_index.unlink()
    commit = git(root, "commit-tree", tree, "-p", "main", "-m", f"{name} work").strip()
    git(root, "update-ref", f"refs/heads/{name}", commit)
    return commit


def test_the_checkout_is_untouched_through_attach_ops_undo_restore_merge_detach(user: Path) -> None:
    git(user, "branch", "review")
    conflicting = side_branch(user, "rival", "notes.txt", "entirely different\n")
    before, listed = checkout_state(user), status(user)

    a = attach.attach(user, "bob")
    assert a.branch == "agent/bob" and a.path == user / ".git" / "gitspace" / "worktrees" / "bob"
    assert a.start == git(user, "rev-parse", "HEAD").strip()
    assert a.dirty == 3  # notes.txt, src/app.py, new.txt: not copied
    assert (a.path / "notes.txt").read_text() == "one\ntwo\nthree\n"
    assert (a.path / "src" / "app.py").read_text() == "print('hi')\n"
    assert not (a.path / "new.txt").exists() and not (a.path / "debug.log").exists()
    assert checkout_state(user) == before and status(user) == listed

    with gitspace.open(a.path, agent="bob") as ws:
        for tool, args in [
            ("create", {"path": "docs/plan.md", "file_text": "step 1\n"}),
            ("str_replace", {"path": "notes.txt", "old_str": "two", "new_str": "2"}),
            ("checkpoint", {"name": "bob-1"}),
            ("append", {"path": "docs/plan.md", "text": "step 2\n"}),
            ("undo", {}),
            ("delete", {"path": "README.md"}),
            ("restore", {"name": "bob-1"}),
        ]:
            assert ws.call(tool, args).ok, tool
        assert ws.branch() == "agent/bob"
    assert checkout_state(user) == before and status(user) == listed
    assert status(a.path) == "!! .gitspace/\n" or status(a.path) == ""

    review = git(user, "rev-parse", "review").strip()
    done = merge.merge(user, "bob", into="review")
    assert done.commit is not None and not done.checkout
    parents = git(user, "rev-list", "--parents", "-n1", "review").split()
    assert parents == [done.commit, review, git(user, "rev-parse", "agent/bob").strip()]
    assert git(user, "show", "review:notes.txt") == "one\n2\nthree\n"
    assert checkout_state(user) == before and status(user) == listed

    with pytest.raises(Conflict, match="conflicts in notes.txt. Nothing was changed"):
        merge.merge(user, "bob", into="rival")
    assert git(user, "rev-parse", "rival").strip() == conflicting
    assert checkout_state(user) == before and status(user) == listed

    gone = attach.detach(user, "bob")
    assert gone.tip == git(user, "rev-parse", "agent/bob").strip()
    assert not a.path.exists()
    assert [w.split()[0] for w in git(user, "worktree", "list").splitlines()] == [str(user)]
    assert checkout_state(user) == before and status(user) == listed
    fsck(user)


@pytest.mark.parametrize("path", ["notes.txt", "src/app.py", "new.txt", "debug.log"])
def test_merge_into_the_checkout_is_refused_when_the_user_has_that_file(user: Path,
                                                                         path: str) -> None:
    a = attach.attach(user, "bob")
    with gitspace.open(a.path, agent="bob") as ws:
        assert ws.call("create", {"path": path, "file_text": "bob's version\n"}).ok
    main = git(user, "rev-parse", "main")
    before, listed = checkout_state(user), status(user)
    with pytest.raises(Conflict, match=f"{path}.*Nothing was changed"):
        merge.merge(user, "bob")
    assert checkout_state(user) == before and status(user) == listed
    assert git(user, "rev-parse", "main") == main


def test_merge_into_the_checkout_writes_only_the_merged_paths(user: Path) -> None:
    a = attach.attach(user, "bob")
    with gitspace.open(a.path, agent="bob") as ws:
        assert ws.call("create", {"path": "docs/guide.md", "file_text": "read me\n"}).ok
        assert ws.call("str_replace", {"path": "README.md", "old_str": "# project",
                                       "new_str": "# project, improved"}).ok
    before, listed, entries = checkout_state(user), status(user), index_entries(user)
    main = git(user, "rev-parse", "main").strip()

    done = merge.merge(user, "bob")
    assert done.checkout and done.target == "main" and done.files == ["README.md", "docs/guide.md"]
    assert git(user, "rev-list", "--parents", "-n1", "main").split()[1:] == [
        main, git(user, "rev-parse", "agent/bob").strip()]
    after = checkout_state(user)
    assert after["HEAD"] == before["HEAD"]  # still on main
    assert (user / "docs" / "guide.md").read_text() == "read me\n"
    assert (user / "README.md").read_text() == "# project, improved\n"
    # Every other file (tracked, untracked, ignored) and every other index entry is untouched,
    # and git status still shows exactly the user's own changes.
    merged = {"README.md", "docs/guide.md"}
    def others(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if k not in merged}

    assert others(after["files"]) == others(before["files"])
    assert others(index_entries(user)) == others(entries)
    assert status(user) == listed
    assert git(user, "diff", "--cached", "--name-only") == "src/app.py\n"
    again = merge.merge(user, "bob")
    assert again.commit is None
    fsck(user)


def test_attach_refuses_a_repository_without_commits(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "main")
    (empty / "draft.txt").write_text("x\n")
    with pytest.raises(GitspaceError, match="no commits yet") as caught:
        attach.attach(empty, "bob")
    assert caught.value.hint and "git commit" in caught.value.hint
    assert git(empty, "for-each-ref") == ""
    assert not (empty / ".git" / "index").exists()


def test_attach_again_detach_and_reattach_continues_the_branch(user: Path) -> None:
    a = attach.attach(user, "bob")
    assert attach.attach(user, "bob").existed
    with gitspace.open(a.path, agent="bob") as ws:
        assert ws.call("create", {"path": "work.txt", "file_text": "1\n"}).ok
        tip = ws.tip()
    attach.detach(user, "bob")
    again = attach.attach(user, "bob")
    assert again.resumed and not again.existed and again.start == tip
    assert (again.path / "work.txt").read_text() == "1\n"


def test_attach_after_the_worktree_folder_was_deleted_by_hand(user: Path) -> None:
    import shutil

    a = attach.attach(user, "bob")
    with gitspace.open(a.path, agent="bob") as ws:
        assert ws.call("create", {"path": "kept.txt", "file_text": "in a commit\n"}).ok
    shutil.rmtree(a.path)
    assert [r.path for r in attach.agents(user)] == [None]
    again = attach.attach(user, "bob")
    assert again.resumed and (again.path / "kept.txt").exists()
    assert len(git(user, "worktree", "list").splitlines()) == 2


def test_detach_never_loses_unrecorded_work_or_sessions(user: Path) -> None:
    a = attach.attach(user, "bob")
    (a.path / "scratch.txt").write_text("not recorded\n")
    sessions = a.path / ".gitspace" / "sessions"
    sessions.mkdir(parents=True)
    (a.path / ".gitspace" / ".gitignore").write_text("*\n")
    (sessions / "s1.json").write_text('{"messages": []}\n')
    with pytest.raises(Conflict, match="scratch.txt") as caught:
        attach.detach(user, "bob")
    assert caught.value.hint and "snapshot" in caught.value.hint
    assert (a.path / "scratch.txt").exists()

    with gitspace.open(a.path) as ws:
        assert ws.snapshot().op
    gone = attach.detach(user, "bob")
    assert git(user, "show", "agent/bob:scratch.txt") == "not recorded\n"
    assert gone.sessions is not None and (gone.sessions / "sessions" / "s1.json").exists()
    with pytest.raises(NotFound, match="branch agent/bob is kept"):
        attach.detach(user, "bob")

    b = attach.attach(user, "eve")
    (b.path / "README.md").write_text("thrown away\n")
    forced = attach.detach(user, "eve", force=True)
    assert forced.discarded == ["README.md"] and not b.path.exists()


def test_agents_lists_branch_worktree_ops_and_last_op(user: Path) -> None:
    bob, eve = attach.attach(user, "bob"), attach.attach(user, "eve")
    with gitspace.open(bob.path, agent="bob") as ws:
        assert ws.call("create", {"path": "a.txt", "file_text": "a\n"}).ok
        assert ws.call("append", {"path": "a.txt", "text": "b\n"}).ok
    attach.detach(user, "eve")
    rows = {a.name: a for a in attach.agents(user)}
    assert rows["bob"].path == bob.path and rows["bob"].ops == 2
    assert rows["bob"].last is not None and rows["bob"].last.tool == "append"
    assert rows["eve"].path is None and rows["eve"].ops == 0 and eve.branch == rows["eve"].branch
    # Listing from inside an agent's worktree shows the same.
    assert [a.name for a in attach.agents(bob.path)] == ["bob", "eve"]


def test_worktree_ops_use_the_worktrees_own_lock_and_journal(user: Path) -> None:
    a = attach.attach(user, "bob")
    with gitspace.open(a.path, agent="bob") as ws:
        assert ws.writer.state_dir == user / ".git" / "worktrees" / "bob" / "gitspace"
        assert ws.repo.commondir == user / ".git"


def test_route_sends_an_attached_agent_to_its_worktree(user: Path) -> None:
    a = attach.attach(user, "bob")
    assert attach.route(user, "bob") == a.path
    assert attach.route(user / "src", "bob") == a.path
    assert attach.route(user, None) == user
    assert attach.route(a.path, "eve") == a.path  # inside a worktree: never rerouted
    # Not attached: never the user's checkout.
    with pytest.raises(NotFound, match="Agent eve is not attached") as caught:
        attach.route(user, "eve")
    assert caught.value.hint and "gitspace -C" in caught.value.hint
    assert "attach --agent eve" in caught.value.hint


def test_route_never_falls_through_to_a_plain_repository_or_a_linked_worktree(user: Path,
                                                                               tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="attach --agent eve"):
        attach.route(user, "eve")  # no agent at all, and not a gitspace workspace
    mine = tmp_path / "feature"
    git(user, "worktree", "add", "-q", "-b", "feature", str(mine))  # .git is a file there
    with pytest.raises(NotFound, match="attach --agent eve"):
        attach.route(mine, "eve")
    bob = attach.attach(user, "bob")
    assert attach.route(mine, "bob") == bob.path  # from the user's linked worktree too
    # A workspace gitspace made (no agents attached) keeps --agent as a name on its own ops.
    ws_root = tmp_path / "ws"
    gitspace.init(ws_root).close()
    assert attach.route(ws_root, "eve") == ws_root


CREATE = '{"path": "x.txt", "file_text": "x\\n"}'


def test_nothing_that_writes_runs_in_the_users_own_checkout(user: Path) -> None:
    before, listed = checkout_state(user), status(user)
    out = gs(user, "--agent", "eve", "call", "create", "--args", CREATE)
    assert out.returncode == 1 and "not attached" in out.stderr and "attach --agent eve" in out.stderr
    for args in (["call", "create", "--args", CREATE], ["snapshot"], ["checkpoint", "c1"],
                 ["branch", "b1"], ["undo"], ["watch"], ["call", "append", "--args",
                                                          '{"path": "notes.txt", "text": "x"}']):
        out = gs(user, *args)
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        assert "not a gitspace workspace" in out.stderr and "gitspace init DIR" in out.stderr, args
        assert "attach --agent NAME" in out.stderr, args
    # Reading works anywhere.
    for args in (["log"], ["status"], ["verify"], ["tools"], ["call", "view", "--args",
                                                              '{"path": "README.md"}']):
        out = gs(user, *args)
        assert out.returncode == 0, (args, out.stderr)
    assert checkout_state(user) == before and status(user) == listed
    assert git(user, "for-each-ref", "--format=%(refname)") == "refs/heads/main\n"
    with gitspace.open(user) as ws:
        assert not ws.owned
        result = ws.call("create", {"path": "x.txt", "file_text": "x\n"})
        assert not result.ok and "not a gitspace workspace" in result.text
        viewed = ws.call("memory", {"command": "view", "path": "/memories"})
        assert "not a gitspace workspace" not in viewed.text
        with pytest.raises(GitspaceError, match="not a gitspace workspace"):
            ws.snapshot()
    from gitspace.team.watch import Watcher

    with pytest.raises(GitspaceError, match="not a gitspace workspace"):
        Watcher(user)
    assert checkout_state(user) == before and status(user) == listed


def test_ownership_follows_the_root_not_the_tip(user: Path, tmp_path: Path) -> None:
    from gitspace.core.owner import owns
    from gitspace.storage.gitrepo import GitRepo

    bob = attach.attach(user, "bob")
    with gitspace.open(bob.path, agent="bob") as ws:
        assert ws.owned
        assert ws.call("create", {"path": "b.txt", "file_text": "b\n"}).ok
    git(user, "stash", "-q", "--include-untracked")
    git(user, "merge", "-q", "--ff-only", "agent/bob")  # the user's main now ends in an op
    repo = GitRepo.open(user)
    try:
        assert not owns(repo)
    finally:
        repo.close()
    work = gitspace.init(tmp_path / "ws", agent="w")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(work.root), str(clone))
    work.close()
    for where in (tmp_path / "ws", clone):
        repo = GitRepo.open(where)
        try:
            assert owns(repo) and owns(repo)  # the second answer comes from the remembered tip
        finally:
            repo.close()


def test_cli_attach_agents_merge_detach(user: Path) -> None:
    before, listed = checkout_state(user), status(user)
    out = gs(user, "attach", "--agent", "bob")
    assert out.returncode == 0, out.stderr
    path = user / ".git" / "gitspace" / "worktrees" / "bob"
    assert str(path) in out.stdout and "not copied" in out.stdout
    out = gs(path, "--agent", "bob", "call", "create", "--args",
             '{"path": "cli.txt", "file_text": "x\\n"}')
    assert out.returncode == 0, out.stderr
    # --agent from the user's checkout goes to that agent's worktree, never into the checkout.
    out = gs(user, "--agent", "bob", "call", "append", "--args",
             '{"path": "cli.txt", "text": "y\\n"}')
    assert out.returncode == 0, out.stderr
    assert (path / "cli.txt").read_text() == "x\ny\n" and not (user / "cli.txt").exists()
    rows = json.loads(gs(user, "agents", "--json").stdout)
    assert [(r["agent"], r["ops"], r["last_tool"], r["path"]) for r in rows] == [
        ("bob", 2, "append", str(path))]
    git(user, "branch", "review", "main")
    out = gs(user, "merge", "bob", "--into", "review")
    assert out.returncode == 0 and "Merged agent/bob into review" in out.stdout, out.stderr
    out = gs(user, "merge", "nobody")
    assert out.returncode == 1 and "no agent nobody" in out.stderr
    out = gs(user, "detach", "bob")
    assert out.returncode == 0 and "kept" in out.stdout, out.stderr
    assert checkout_state(user) == before and status(user) == listed


def test_an_agent_cannot_switch_to_a_branch_checked_out_elsewhere(user: Path) -> None:
    bob, eve = attach.attach(user, "bob"), attach.attach(user, "eve")
    before, listed = checkout_state(user), status(user)
    with gitspace.open(bob.path, agent="bob") as ws:
        for name, where in (("main", user), ("agent/eve", eve.path)):
            result = ws.call("switch", {"name": name})
            assert not result.ok and f"checked out in {where}" in result.text
        assert ws.branch() == "agent/bob"
        assert ws.call("branch", {"name": "bob/second"}).ok  # a branch of its own is fine
        assert ws.call("create", {"path": "x.txt", "file_text": "x\n"}).ok
    assert git(user, "rev-parse", "bob/second") != git(user, "rev-parse", "main")
    assert checkout_state(user) == before and status(user) == listed


def _bob_with_a_new_file(user: Path) -> Path:
    a = attach.attach(user, "bob")
    with gitspace.open(a.path, agent="bob") as ws:
        assert ws.call("create", {"path": "x.txt", "file_text": "bob\n"}).ok
    return a.path


def test_merge_into_the_checkout_waits_for_nobody_and_leaves_nothing_half_done(user: Path) -> None:
    _bob_with_a_new_file(user)
    main = git(user, "rev-parse", "main")
    before, listed = checkout_state(user), status(user)
    lock = user / ".git" / "refs" / "heads" / "main.lock"
    lock.touch()  # someone else is updating main
    with pytest.raises(GitspaceError, match="main.lock exists") as caught:
        merge.merge(user, "bob")
    assert caught.value.hint and "remove that file" in caught.value.hint
    assert checkout_state(user) == before and status(user) == listed
    assert git(user, "rev-parse", "main") == main
    lock.unlink()

    # Ctrl-C between the files and the ref
    with faults.inject("ref.update", KeyboardInterrupt()), pytest.raises(KeyboardInterrupt):
        merge.merge(user, "bob")
    assert checkout_state(user) == before and status(user) == listed
    assert git(user, "rev-parse", "main") == main and not lock.exists()
    assert merge.merge(user, "bob").checkout
    assert (user / "x.txt").read_text() == "bob\n"
    fsck(user)


def test_merge_and_attach_from_the_users_own_linked_worktree(user: Path, tmp_path: Path) -> None:
    mine = tmp_path / "feature"
    git(user, "worktree", "add", "-q", "-b", "feature", str(mine))
    git(mine, "commit", "-q", "--allow-empty", "-m", "feature work")
    bob = attach.attach(mine, "bob")  # starts from the linked worktree's HEAD
    assert bob.start == git(mine, "rev-parse", "HEAD").strip()
    with gitspace.open(bob.path, agent="bob") as ws:
        assert ws.call("create", {"path": "x.txt", "file_text": "bob\n"}).ok
    main_before, main_listed = checkout_state(user), status(user)
    done = merge.merge(mine, "bob")  # into feature, the branch checked out here
    assert done.target == "feature" and done.checkout
    assert (mine / "x.txt").read_text() == "bob\n"
    assert checkout_state(user) == main_before and status(user) == main_listed
    # main is checked out in the other (main) checkout: say so, and where to run it.
    with pytest.raises(Conflict, match="another of your worktrees") as caught:
        merge.merge(mine, "bob", into="main")
    assert caught.value.hint and f"gitspace -C {user} merge bob" in caught.value.hint
    eve = attach.attach(user, "eve")
    with pytest.raises(Conflict, match="agent eve's worktree"):
        merge.merge(user, "bob", into="agent/eve")
    assert eve.path.exists()


def test_merging_unrelated_histories_is_refused_with_a_next_step(user: Path) -> None:
    _bob_with_a_new_file(user)
    tree = git(user, "write-tree").strip()
    lonely = git(user, "commit-tree", tree, "-m", "a root of its own").strip()
    git(user, "update-ref", "refs/heads/lonely", lonely)
    with pytest.raises(Conflict, match="share no history") as caught:
        merge.merge(user, "bob", into="lonely")
    assert caught.value.hint and "--allow-unrelated-histories" in caught.value.hint


def _sessions(worktree: Path, text: str) -> None:
    folder = worktree / ".gitspace" / "sessions"
    folder.mkdir(parents=True)
    (worktree / ".gitspace" / ".gitignore").write_text("*\n")
    (folder / "s1.json").write_text(text)


def test_detach_counts_what_git_counts_and_restores_sessions_when_removal_fails(
        user: Path) -> None:
    a = attach.attach(user, "bob")
    (a.path / "nested").mkdir()
    git(a.path / "nested", "init", "-q")  # a repository inside: git status shows the folder
    (a.path / "nested" / "inner.txt").write_text("in a repository of its own\n")
    (a.path / "debug.log").write_text("ignored\n")
    with pytest.raises(Conflict, match="nested/") as caught:
        attach.detach(user, "bob")
    assert "debug.log" in str(caught.value) and caught.value.hint and "--force" in caught.value.hint
    import shutil

    shutil.rmtree(a.path / "nested")
    _sessions(a.path, '{"n": 1}\n')
    git(user, "worktree", "lock", str(a.path))
    with pytest.raises(GitspaceError, match="Could not remove agent bob's worktree") as failed:
        attach.detach(user, "bob")
    assert failed.value.hint and "git worktree unlock" in failed.value.hint
    assert (a.path / ".gitspace" / "sessions" / "s1.json").read_text() == '{"n": 1}\n'
    assert not any((user / ".git" / "gitspace" / "detached").iterdir())
    git(user, "worktree", "unlock", str(a.path))
    gone = attach.detach(user, "bob")
    assert gone.ignored == ["debug.log"] and not a.path.exists()
    # Detaching again within the same second keeps both archives apart.
    again = attach.attach(user, "bob")
    _sessions(again.path, '{"n": 2}\n')
    second = attach.detach(user, "bob")
    assert gone.sessions and second.sessions and gone.sessions != second.sessions
    assert (gone.sessions / "sessions" / "s1.json").read_text() == '{"n": 1}\n'
    assert (second.sessions / "sessions" / "s1.json").read_text() == '{"n": 2}\n'


def test_reading_commands_never_refresh_the_users_index(tmp_path: Path) -> None:
    """git status refreshes stale stat data in the index by default; in a user's checkout that
    would rewrite their index file, so gitspace's reads ask git not to."""
    import os
    import subprocess

    repo = tmp_path / "mine"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.name", "u"],
                 ["config", "user.email", "u@x"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "a.txt").write_text("same\n")
    subprocess.run(["git", "add", "a.txt"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "mine"], cwd=repo, check=True)
    os.utime(repo / "a.txt", (1_600_000_000, 1_600_000_000))  # stale stat data, same content
    before = (repo / ".git" / "index").read_bytes()
    for command in (["status"], ["log"], ["tools"]):
        out = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(repo), *command],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert (repo / ".git" / "index").read_bytes() == before, command
