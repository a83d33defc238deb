"""A hostile remote never makes sync write outside the workspace or lose a local op.

(Forged trailers and a planted link are tried through both hosts, ``git daemon`` and the
smart-HTTP host teams use: ``any_server``.)

The attacker has push access to the server (a plain git clone, ``evil``) or runs it (the host's
admin rewrites refs, or a server-side hook drops refs while serving a fetch). In every case the
clone's unpushed ops must survive, nothing outside its work tree may change (a sibling folder is
hashed before and after), and a refusal must leave the clone and the remote as they were.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from conftest import assert_clean, call_ok, git, op_ids, state
from fleet import clone, machine, ops_of, seed
from gitserver import GitServer

import gitspace
from gitspace.errors import Conflict
from gitspace.storage import ledger
from gitspace.team.rebase import SyncStopped
from gitspace.team.sync import sync


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the workspaces that nothing may write into."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "keep.txt").write_text("the user's file\n")
    return folder


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        h.update(str(path.relative_to(folder)).encode())
        h.update(os.readlink(path).encode() if path.is_symlink() else
                 path.read_bytes() if path.is_file() else b"/")
    return h.hexdigest()


def evil_clone(tmp_path: Path, server: GitServer) -> Path:
    return clone(server, server.url("fleet"), tmp_path / "evil")


def evil_push(root: Path, message: str) -> str:
    """Commit what is staged (or nothing) with ``message`` and push it; the new commit."""
    git(root, "commit", "-q", "--allow-empty", "-F", "-", input=message.encode())
    git(root, "push", "-q", "origin", "HEAD:refs/heads/main")
    return git(root, "rev-parse", "HEAD").strip()


def plant_link(tmp_path: Path, server: GitServer, target: Path) -> Path:
    """The attacker pushes ``lnk``, a symlink to ``target``; returns its clone."""
    evil = evil_clone(tmp_path, server)
    os.symlink(target, evil / "lnk")
    git(evil, "add", "lnk")
    evil_push(evil, "a link to outside")
    return evil


def test_a_forged_copy_of_an_unpushed_op_id_is_refused(tmp_path: Path, git_server: GitServer,
                                                       outside: Path) -> None:
    seed(tmp_path, git_server).close()
    b = machine(tmp_path, git_server, 1)
    mine = call_ok(b, "append", {"path": "shared/log.md", "text": "b's work\n"})
    evil = evil_clone(tmp_path, git_server)
    (evil / "shared/log.md").write_text("log\nforged\n")
    git(evil, "add", "-A")
    forged = ledger.Op(op_id=mine.op or "", tool="append",
                       args={"path": "shared/log.md", "text": "forged\n"}, agent="agent-1")
    evil_push(evil, ledger.encode_message(forged, "append shared/log.md"))
    before, remote_before, seen = state(b.root), git_server.refs("fleet"), digest(outside)
    with pytest.raises(Conflict, match=f"Op {mine.op} is both on origin/main") as twice:
        sync(b)
    assert twice.value.hint is not None
    assert f"'gitspace sync origin --drop {mine.op}'" in twice.value.hint
    assert "'gitspace branch NAME'" in twice.value.hint
    assert state(b.root) == before and git_server.refs("fleet") == remote_before
    # The way on that the refusal offers keeps the op: a branch of its own, pushed as it is.
    call_ok(b, "branch", {"name": "b-own"})
    sync(b)
    assert [op.op_id for op in ops_of(git_server.path("fleet"), "refs/heads/b-own")].count(
        mine.op) == 1
    assert digest(outside) == seen
    b.close()


def test_forged_and_malformed_trailers_on_the_remote_are_only_commits(
        tmp_path: Path, any_server: GitServer, outside: Path) -> None:
    seed(tmp_path, any_server).close()
    b = machine(tmp_path, any_server, 1)
    mine = call_ok(b, "append", {"path": "shared/log.md", "text": "b's work\n"})
    evil = evil_clone(tmp_path, any_server)
    claims = ledger.Op(op_id=ledger.new_op_id(), tool="append",
                       args={"path": "shared/log.md", "text": "x\n"}, agent="agent-1",
                       rebased_from=mine.commit)  # "this is b's op, already pushed"
    evil_push(evil, ledger.encode_message(claims, "append shared/log.md"))
    evil_push(evil, f"undo\n\nGitspace-Format: 1\nGitspace-Op: {mine.op}\nGitspace-Tool: undo\n"
                    "Gitspace-Mood: hostile\n")  # malformed: not an op at all
    seen = digest(outside)
    done = sync(b)
    assert done.rebased == 1 and done.pushed == 1
    on_remote = [op.op_id for op in ops_of(any_server.path("fleet"))]
    assert on_remote.count(mine.op) == 1 and on_remote[-1] == mine.op
    assert (b.root / "shared/log.md").read_text() == "log\nb's work\n"
    assert digest(outside) == seen
    assert_clean(b.root)
    b.close()


def test_a_rewritten_remote_branch_is_refused(tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    call_ok(a, "append", {"path": "shared/log.md", "text": "shared op\n"})
    sync(a)
    sync(b)
    shared = op_ids(b.root)[-1]
    mine = call_ok(b, "append", {"path": "shared/log.md", "text": "b's work\n"})
    # The host's admin rewrites main: the shared op is gone, another commit is in its place.
    evil = evil_clone(tmp_path, git_server)
    git(evil, "reset", "-q", "--hard", "HEAD~1")
    git(evil, "commit", "-q", "--allow-empty", "-m", "history, rewritten")
    git(evil, "push", "-q", "origin", "HEAD:refs/heads/staging")
    git_server.git("fleet", "update-ref", "refs/heads/main", git(evil, "rev-parse", "HEAD").strip())
    git_server.git("fleet", "update-ref", "-d", "refs/heads/staging")
    before, remote_before = state(b.root), git_server.refs("fleet")
    with pytest.raises(Conflict, match="rewritten") as refusal:
        sync(b)
    assert "git update-ref refs/remotes/origin/main" in str(refusal.value)
    assert state(b.root) == before and git_server.refs("fleet") == remote_before
    assert op_ids(b.root)[-2:] == [shared, mine.op]
    a.close()
    b.close()


def test_refs_dropped_while_syncing_lose_nothing(tmp_path: Path, git_server: GitServer,
                                                 outside: Path) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    call_ok(a, "append", {"path": "shared/log.md", "text": "a\n"})
    call_ok(a, "checkpoint", {"name": "a-1"})
    sync(a)
    mine = call_ok(b, "append", {"path": "shared/log.md", "text": "b\n"})
    seen = digest(outside)

    def drop_everything(step: str) -> None:  # the remote loses its refs just before the push
        if step == "push":
            for ref in git_server.refs("fleet"):
                git_server.git("fleet", "update-ref", "-d", ref)

    done = sync(b, on_step=drop_everything)
    assert any("deleted main while this sync ran" in note for note in done.notes)
    on_remote = [op.op_id for op in ops_of(git_server.path("fleet"))]
    assert mine.op in on_remote and op_ids(a.root)[-1] in on_remote
    assert digest(outside) == seen
    # A remote that drops the branch between syncs is not re-created behind anyone's back.
    git_server.git("fleet", "update-ref", "-d", "refs/heads/main")
    call_ok(b, "append", {"path": "shared/log.md", "text": "b again\n"})
    before = state(b.root)
    with pytest.raises(Conflict, match="no longer has branch main") as gone:
        sync(b)
    assert gone.value.message.endswith(
        "Sync never re-creates a branch someone deleted; nothing was changed.")
    assert gone.value.hint == "If it should exist again, push it on purpose: 'gitspace push origin'."
    assert state(b.root) == before and "refs/heads/main" not in git_server.refs("fleet")
    a.close()
    b.close()


def test_a_server_hook_that_drops_refs_while_serving_the_fetch(
        tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    call_ok(a, "append", {"path": "shared/log.md", "text": "a\n"})
    sync(a)
    mine = call_ok(b, "append", {"path": "shared/log.md", "text": "b\n"})
    hook = tmp_path / "drop-refs"
    hook.write_text("#!/bin/sh\ngit update-ref -d refs/heads/main\nexec \"$@\"\n")
    hook.chmod(0o755)
    git_server.global_config.write_text(f"[uploadpack]\n\tpackObjectsHook = {hook}\n")
    done = sync(b)  # the fetch is served, the branch is gone when the push arrives
    assert done.notes and mine.op in [op.op_id for op in ops_of(git_server.path("fleet"))]
    assert git(b.root, "rev-parse", "HEAD").strip() == git_server.refs("fleet")["refs/heads/main"]
    assert_clean(b.root)
    a.close()
    b.close()


def test_a_symlink_planted_in_remote_history_is_never_written_through(
        tmp_path: Path, any_server: GitServer, outside: Path) -> None:
    seed(tmp_path, any_server).close()
    b = machine(tmp_path, any_server, 1)
    c = machine(tmp_path, any_server, 2)
    mine = call_ok(c, "create", {"path": "lnk/mine.md", "file_text": "c's file\n"})
    seen = digest(outside)
    evil = plant_link(tmp_path, any_server, outside)
    sync(b)  # b checks the link out (a symlink is a file like any other)
    assert (b.root / "lnk").is_symlink()
    (evil / "lnk").unlink()
    (evil / "lnk").mkdir()
    (evil / "lnk" / "pwned").write_text("written through the link\n")
    git(evil, "add", "-A")
    evil_push(evil, "the link becomes a folder")
    sync(b)  # the link is removed before anything is written beneath its name
    assert (b.root / "lnk").is_dir() and not (b.root / "lnk").is_symlink()
    assert digest(outside) == seen
    assert_clean(b.root)
    # c made lnk/mine.md while lnk was a folder; on the remote, lnk/ came and went as a link:
    # re-run there, the op works in c's scratch repository only, and lands in the folder.
    before = state(c.root)
    try:
        sync(c)
    except SyncStopped:
        assert state(c.root) == before
    else:
        assert (c.root / "lnk" / "mine.md").read_text() == "c's file\n"
        assert mine.op in [op.op_id for op in ops_of(any_server.path("fleet"))]
    assert digest(outside) == seen
    b.close()
    c.close()


def test_a_link_on_the_remote_stops_an_op_that_writes_beneath_it(
        tmp_path: Path, git_server: GitServer, outside: Path) -> None:
    seed(tmp_path, git_server).close()
    c = machine(tmp_path, git_server, 2)
    mine = call_ok(c, "create", {"path": "lnk/mine.md", "file_text": "c's file\n"})
    plant_link(tmp_path, git_server, outside)  # where c has a folder
    seen, before, remote_before = digest(outside), state(c.root), git_server.refs("fleet")
    with pytest.raises(SyncStopped) as stop:
        sync(c)
    assert mine.op in str(stop.value)
    assert digest(outside) == seen
    assert state(c.root) == before and git_server.refs("fleet") == remote_before
    assert op_ids(c.root)[-1] == mine.op
    c.close()


def test_a_clone_that_was_never_a_workspace_is_left_alone(tmp_path: Path,
                                                          git_server: GitServer) -> None:
    url = git_server.create("plain")
    user = tmp_path / "user"
    git(tmp_path, "clone", "-q", url, str(user))
    git(user, "commit", "-q", "--allow-empty", "-m", "the user's own commit")
    ws = gitspace.open(user)
    with pytest.raises(gitspace.GitspaceError, match="sync"):
        sync(ws)
    ws.close()
