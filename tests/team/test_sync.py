"""push and pull through a local bare repository: branches and checkpoints move, nothing forces.

The bare remote logs every ref update (core.logAllRefUpdates=always), so the tests can check
that no update ever moved a ref to a commit that does not contain the old one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_clean, git, state
from user_repo import checkout_state, gs, make_user_repo, status

import gitspace
from gitspace.agent.session import Session
from gitspace.agent.transcript import commit_transcript
from gitspace.core import timeline as history
from gitspace.errors import Conflict, GitspaceError
from gitspace.storage.refs import ZERO
from gitspace.team import attach
from gitspace.team import remote as sync


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(bare, "config", "core.logAllRefUpdates", "always")
    return bare


def remote_refs(bare: Path) -> dict[str, str]:
    out = git(bare, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ") for line in out.splitlines())


def assert_never_forced(bare: Path) -> None:
    """Every update the remote ever logged kept the old commit in the new one's history."""
    logs = sorted((bare / "logs" / "refs").rglob("*"))
    assert logs, "the remote logged no ref update"
    for log in logs:
        if log.is_dir():
            continue
        for line in log.read_text().splitlines():
            old, new = line.split()[:2]
            if old != ZERO:
                proc = git(bare, "merge-base", "--is-ancestor", old, new)
                assert proc == "", f"{log.name}: {old} -> {new}"


def clone(remote: Path, target: Path, agent: str) -> gitspace.Workspace:
    git(remote.parent, "clone", "-q", str(remote), str(target))
    return gitspace.open(target, agent=agent)


def origin(tmp_path: Path, remote: Path) -> gitspace.Workspace:
    """Alice's workspace with ``remote`` as origin (nothing pushed yet)."""
    a = gitspace.init(tmp_path / "a", agent="alice")
    git(a.root, "remote", "add", "origin", str(remote))
    return a


def pushed_pair(tmp_path: Path, remote: Path) -> tuple[gitspace.Workspace, gitspace.Workspace]:
    """Alice's workspace pushed to ``remote``, and Bob's clone of it."""
    a = origin(tmp_path, remote)
    sync.push(a)
    return a, clone(remote, tmp_path / "b", "bob")


def moved(report: sync.SyncReport) -> list[str]:
    return [ref for ref, _ in report.moved]


def timeline(ws: gitspace.Workspace, rev: str = "main") -> list[dict[str, object]]:
    return [e.as_json() for e in history.timeline(ws, None, rev)]


def test_two_clones_exchange_branches_and_checkpoints(tmp_path: Path, remote: Path) -> None:
    a = origin(tmp_path, remote)
    assert a.call("create", {"path": "notes.md", "file_text": "from alice\n"}).ok
    assert a.call("checkpoint", {"name": "alice-1"}).ok
    assert moved(sync.push(a)) == ["refs/heads/main", "refs/tags/gitspace/alice-1"]
    assert moved(sync.push(a)) == []

    b = clone(remote, tmp_path / "b", "bob")
    assert timeline(b) == timeline(a)
    assert b.call("append", {"path": "notes.md", "text": "from bob\n"}).ok
    assert b.call("checkpoint", {"name": "bob-1"}).ok
    assert b.call("branch", {"name": "explore/east", "switch": False}).ok
    assert moved(sync.push(b, extra=("explore/east",))) == [
        "refs/heads/main", "refs/heads/explore/east", "refs/tags/gitspace/bob-1"]

    report = sync.pull(a, extra=("explore/east",))
    assert sorted(moved(report)) == ["refs/heads/explore/east", "refs/heads/main",
                                     "refs/tags/gitspace/bob-1"]
    assert (a.root / "notes.md").read_text() == "from alice\nfrom bob\n"
    assert_clean(a.root)
    # The pulled history reads the same here as where it was made.
    assert timeline(a) == timeline(b)
    assert timeline(a, "explore/east") == timeline(b, "explore/east")
    assert [vars(c) for c in gitspace_checkpoints(a)] == [vars(c) for c in gitspace_checkpoints(b)]
    assert history.verify(a).ok
    assert moved(sync.pull(a, extra=("explore/east",))) == []
    assert_never_forced(remote)
    a.close()
    b.close()


def gitspace_checkpoints(ws: gitspace.Workspace) -> list[object]:
    from gitspace.core import checkpoints

    return list(checkpoints.listing(ws))


def test_a_pulled_branch_replays_as_at_the_origin(tmp_path: Path, remote: Path) -> None:
    from gitspace.replay import engine as replay
    a, b = pushed_pair(tmp_path, remote)
    for n in range(3):
        assert a.call("append", {"path": "log.md", "text": f"line {n}\n"}).ok
    assert a.call("checkpoint", {"name": "two"}).ok
    assert a.call("undo", {}).ok
    assert a.call("restore", {"name": "two"}).ok
    sync.push(a)
    assert moved(sync.pull(b)) == ["refs/heads/main", "refs/tags/gitspace/two"]
    assert b.tip() == a.tip()
    here, there = replay.replay(a, a.tip()), replay.replay(b, b.tip())
    assert here.ok and there.ok and here.as_json() == there.as_json()
    a.close()
    b.close()


def test_diverged_branches_and_clashing_checkpoints_are_refused(tmp_path: Path,
                                                                 remote: Path) -> None:
    a, b = pushed_pair(tmp_path, remote)
    assert a.call("create", {"path": "a.txt", "file_text": "a\n"}).ok
    assert b.call("create", {"path": "b.txt", "file_text": "b\n"}).ok
    sync.push(b)
    published = remote_refs(remote)

    before = state(a.root)
    with pytest.raises(Conflict, match="has ops on main that this clone does not have") as push:
        sync.push(a)
    assert push.value.hint and "gitspace pull" in push.value.hint
    with pytest.raises(Conflict, match="main here and on origin both have ops") as pull:
        sync.pull(a)
    assert pull.value.hint and "new branch" in pull.value.hint
    assert state(a.root) == before and remote_refs(remote) == published
    # Not even git itself would take it without forcing: the remote is protected either way.
    assert git(remote, "rev-parse", "main").strip() == b.tip()

    # Same checkpoint name at different commits: refused both ways, neither tag moves.
    c = clone(remote, tmp_path / "c", "carol")
    assert c.call("checkpoint", {"name": "same"}).ok
    sync.push(c)
    assert b.call("append", {"path": "b.txt", "text": "more\n"}).ok
    assert b.call("checkpoint", {"name": "same"}).ok
    with pytest.raises(Conflict, match="checkpoint same exists on origin at another commit"):
        sync.push(b)
    mine = git(b.root, "rev-parse", "refs/tags/gitspace/same")
    with pytest.raises(Conflict, match="checkpoint same exists here at another commit"):
        sync.pull(b)
    assert git(b.root, "rev-parse", "refs/tags/gitspace/same") == mine
    assert remote_refs(remote)["refs/tags/gitspace/same"] == git(
        c.root, "rev-parse", "refs/tags/gitspace/same").strip()
    assert_never_forced(remote)
    for ws in (a, b, c):
        ws.close()


def test_pull_refuses_to_overwrite_unrecorded_changes(tmp_path: Path, remote: Path) -> None:
    a, b = pushed_pair(tmp_path, remote)
    assert b.call("create", {"path": "shared.md", "file_text": "bob\n"}).ok
    sync.push(b)
    (a.root / "shared.md").write_text("alice, not recorded\n")
    before = state(a.root)
    with pytest.raises(Conflict, match="overwrite shared.md") as caught:
        sync.pull(a)
    assert caught.value.hint and "snapshot" in caught.value.hint
    assert state(a.root) == before
    a.close()
    b.close()


def test_transcripts_stay_local_unless_committed(tmp_path: Path, remote: Path) -> None:
    a = origin(tmp_path, remote)
    session = Session.new(a.root, "a task with PRIVATE-CONVERSATION-TEXT", agent="alice",
                          client="scripted", scripted=True)
    session.save()
    assert a.call("create", {"path": "work.md", "file_text": "done\n"}).ok
    assert_clean(a.root)  # the session file ignores itself
    sync.push(a)
    everything = git(remote, "cat-file", "--batch-all-objects", "--batch")
    assert "PRIVATE-CONVERSATION-TEXT" not in everything
    assert git(remote, "ls-tree", "-r", "--name-only", "main").split() == [".gitignore",
                                                                            "work.md"]

    assert commit_transcript(a, session).ok  # the explicit opt-in
    sync.push(a)
    assert git(remote, "ls-tree", "-r", "--name-only", "main").split() == [
        ".gitignore", f"transcripts/{session.id}.json", "work.md"]
    assert "PRIVATE-CONVERSATION-TEXT" in git(remote, "show", f"main:transcripts/{session.id}.json")
    a.close()


def test_agent_branches_travel_between_clones_of_a_users_repository(tmp_path: Path,
                                                                     remote: Path) -> None:
    user = make_user_repo(tmp_path / "user")
    git(user, "remote", "add", "origin", str(remote))
    git(user, "push", "-q", "origin", "main")
    bob = attach.attach(user, "bob").path
    with gitspace.open(bob, agent="bob") as ws:
        assert ws.call("create", {"path": "bob.md", "file_text": "1\n"}).ok
        assert ws.call("checkpoint", {"name": "bob-1"}).ok
    before, listed = checkout_state(user), status(user)
    with gitspace.open(user) as ws:
        report = sync.push(ws)  # from the user's own checkout
    assert moved(report) == ["refs/heads/agent/bob", "refs/tags/gitspace/bob-1"]
    assert any("main is your own branch" in note for note in report.notes)
    assert checkout_state(user) == before and status(user) == listed

    # Another clone continues bob's branch and sends it back.
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    with gitspace.open(other) as ws:
        assert moved(sync.pull(ws)) == ["refs/heads/agent/bob"]
    there = attach.attach(other, "bob")
    assert there.resumed and (there.path / "bob.md").read_text() == "1\n"
    with gitspace.open(there.path, agent="bob") as ws:
        assert ws.call("append", {"path": "bob.md", "text": "2\n"}).ok
        assert moved(sync.push(ws)) == ["refs/heads/agent/bob"]

    with gitspace.open(user) as ws:
        report = sync.pull(ws)  # bob's branch is checked out in bob's worktree: left to it
    assert moved(report) == [] and any("pull' there" in note for note in report.notes)
    with gitspace.open(bob, agent="bob") as ws:
        assert moved(sync.pull(ws)) == ["refs/heads/agent/bob"]
    assert (bob / "bob.md").read_text() == "1\n2\n"
    assert status(bob) in ("", "!! .gitspace/\n")
    assert checkout_state(user) == before and status(user) == listed
    assert_never_forced(remote)


def test_cli_push_and_pull(tmp_path: Path, remote: Path) -> None:
    a = tmp_path / "a"
    assert gs(tmp_path, "init", str(a)).returncode == 0
    git(a, "remote", "add", "origin", str(remote))
    out = gs(a, "push")
    assert out.returncode == 0 and "pushed main: new" in out.stdout, out.stderr
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(b))
    for where in (a, b):
        out = gs(where, "--agent", where.name, "call", "create", "--args",
                 f'{{"path": "{where.name}.txt", "file_text": "x\\n"}}')
        assert out.returncode == 0, out.stderr
    assert gs(b, "push").returncode == 0
    out = gs(a, "pull")
    assert out.returncode == 1 and "Pull refused" in out.stderr and "hint:" in out.stderr
    out = gs(b, "pull")
    assert out.returncode == 0 and "Nothing to pull" in out.stdout, out.stderr


def test_which_current_branch_moves_depends_on_the_checkout_not_on_its_tip(
        tmp_path: Path, remote: Path) -> None:
    from gitspace.team import merge

    # A user's repository whose main fast-forwarded onto an agent's op is still the user's.
    user = make_user_repo(tmp_path / "user")
    git(user, "remote", "add", "origin", str(remote))
    git(user, "push", "-q", "origin", "main")
    bob = attach.attach(user, "bob").path
    with gitspace.open(bob, agent="bob") as ws:
        assert ws.call("create", {"path": "bob.md", "file_text": "1\n"}).ok
    git(user, "stash", "-q", "--include-untracked")
    git(user, "merge", "-q", "--ff-only", "agent/bob")
    published = remote_refs(remote)["refs/heads/main"]
    with gitspace.open(user) as ws:
        report = sync.push(ws)
    assert moved(report) == ["refs/heads/agent/bob"]
    assert any("main is your own branch" in note for note in report.notes)
    assert remote_refs(remote)["refs/heads/main"] == published

    # A workspace's main after 'gitspace merge' (a merge commit at the tip) is still gitspace's.
    other = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(other))
    work = gitspace.init(tmp_path / "work", agent="w")
    git(work.root, "remote", "add", "origin", str(other))
    eve = attach.attach(work.root, "eve").path
    with gitspace.open(eve, agent="eve") as ws:
        assert ws.call("create", {"path": "eve.md", "file_text": "e\n"}).ok
    done = merge.merge(work.root, "eve")
    assert done.checkout and done.commit is not None
    assert moved(sync.push(work)) == ["refs/heads/main", "refs/heads/agent/eve"]
    assert remote_refs(other)["refs/heads/main"] == done.commit
    work.close()


def test_pull_is_all_or_nothing(tmp_path: Path, remote: Path) -> None:
    a, b = pushed_pair(tmp_path, remote)
    assert b.call("create", {"path": "b.txt", "file_text": "b\n"}).ok
    for name in ("agent/x/y", "agent/z"):
        assert b.call("branch", {"name": name, "switch": False}).ok
    sync.push(b, extra=("agent/x/y",))
    assert a.call("branch", {"name": "agent/x", "switch": False}).ok  # a folder name clash
    before, refs = state(a.root), git(a.root, "for-each-ref")
    with pytest.raises(Conflict, match="agent/x/y on origin cannot be created here, where "
                                       "agent/x exists") as caught:
        sync.pull(a)
    assert caught.value.hint
    assert state(a.root) == before and git(a.root, "for-each-ref") == refs

    # A ref that cannot be locked stops the pull before the checkout moves.
    git(a.root, "branch", "-D", "agent/x")
    refs = git(a.root, "for-each-ref")
    lock = a.root / ".git" / "refs" / "heads" / "agent" / "z.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.touch()
    with pytest.raises(GitspaceError, match="agent/z") as locked:
        sync.pull(a)
    assert "Nothing was changed" in str(locked.value)
    assert state(a.root) == before and git(a.root, "for-each-ref") == refs
    lock.unlink()
    assert set(moved(sync.pull(a))) == {"refs/heads/main", "refs/heads/agent/x/y",
                                        "refs/heads/agent/z"}
    assert (a.root / "b.txt").read_text() == "b\n" and a.tip() == b.tip()
    assert_clean(a.root)
    a.close()
    b.close()


def test_sync_messages_say_what_to_do(tmp_path: Path) -> None:
    a = gitspace.init(tmp_path / "a", agent="alice")
    with pytest.raises(GitspaceError) as bad:
        sync.push(a, "--upload-pack=evil")
    assert bad.value.hint and "git remote -v" in bad.value.hint
    a.close()
