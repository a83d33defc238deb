"""``sync`` between clones through a real git server: ops rebased by meaning, never forced.

Every test talks to ``git daemon`` on 127.0.0.1 (tests/gitserver.py), whose repositories log
every ref update, so ``assert_never_forced`` checks from the server's own reflog that no update
ever dropped a commit.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_clean, call_ok, git, message_of, op_ids, state
from fleet import assert_never_forced, machine, ops_of, remote_ops, seed
from gitserver import GitServer

import gitspace
from gitspace.core import checkpoints, undo
from gitspace.errors import BadArguments, Conflict
from gitspace.storage import ledger
from gitspace.team.rebase import SyncStopped
from gitspace.team.sync import sync


def test_unpushed_ops_are_rerun_on_the_remotes_new_ops(tmp_path: Path,
                                                       git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    mine = call_ok(b, "append", {"path": "shared/log.md", "text": "from b\n"})
    call_ok(b, "str_replace", {"path": "shared/board.md", "old_str": "slot-1: v0\n",
                               "new_str": "slot-1: v1\n"})
    call_ok(a, "append", {"path": "shared/log.md", "text": "from a\n"})
    call_ok(a, "str_replace", {"path": "shared/board.md", "old_str": "slot-0: v0\n",
                               "new_str": "slot-0: v1\n"})
    first = sync(a)
    assert first.pushed == 2 and first.rebased == 0
    done = sync(b)  # a text rebase conflicts twice here (same end of file, adjacent lines)
    assert (done.pulled, done.rebased, done.pushed) == (2, 2, 2)
    assert (b.root / "shared/log.md").read_text() == "log\nfrom a\nfrom b\n"
    # The branch's reflog says what moved it.
    assert git(b.root, "reflog", "-1", "--format=%gs", "refs/heads/main").strip() == "gitspace: sync"
    assert "slot-0: v1\nslot-1: v1\n" in (b.root / "shared/board.md").read_text()
    # Op ids are what they were; each re-run op names the commit it was first recorded as.
    assert op_ids(b.root)[-2:] == [mine.op, op_ids(b.root)[-1]]
    rebased = ledger.parse_message(message_of(b.root, "HEAD~1"))
    assert rebased is not None and rebased.op_id == mine.op
    assert rebased.rebased_from == mine.commit
    assert sync(a).pulled == 2
    assert git(a.root, "rev-parse", "HEAD") == git(b.root, "rev-parse", "HEAD")
    assert [op.op_id for op in remote_ops(git_server)] == op_ids(a.root)
    for ws in (a, b):
        assert_clean(ws.root)
        assert not sync(ws).changed
        ws.close()
    assert_never_forced(git_server)


def rivals(tmp_path: Path, server: GitServer) -> tuple[gitspace.Workspace, gitspace.Workspace,
                                                       gitspace.Result]:
    """Machines a and b both str_replace slot-2 of the board; a has synced, b has not (b's op)."""
    a = seed(tmp_path, server)
    b = machine(tmp_path, server, 1)
    call_ok(a, "str_replace", {"path": "shared/board.md", "old_str": "slot-2: v0",
                               "new_str": "slot-2: a"})
    sync(a)
    return a, b, call_ok(b, "str_replace", {"path": "shared/board.md", "old_str": "slot-2: v0",
                                            "new_str": "slot-2: b"})


def test_a_str_replace_whose_text_changed_stops_with_nothing_changed(
        tmp_path: Path, git_server: GitServer) -> None:
    a, b, ours = rivals(tmp_path, git_server)
    before_b, before_a, before_remote = state(b.root), state(a.root), git_server.refs("fleet")
    with pytest.raises(SyncStopped) as stop:
        sync(b)
    text = str(stop.value)
    assert ours.op in text and "str_replace" in text and "agent-1" in text  # our side
    theirs = op_ids(a.root)[-1]
    assert theirs in text and "agent-0" in text and "shared/board.md" in text  # their side
    assert f"--drop {ours.op}" in text and "gitspace branch NAME" in text  # the two ways on
    assert state(b.root) == before_b and state(a.root) == before_a
    assert git_server.refs("fleet") == before_remote
    assert_clean(b.root)
    a.close()
    b.close()


def test_drop_leaves_one_op_out_and_syncs_the_rest(tmp_path: Path,
                                                   git_server: GitServer) -> None:
    a, b, loser = rivals(tmp_path, git_server)
    kept = call_ok(b, "append", {"path": "shared/log.md", "text": "b was here\n"})
    with pytest.raises(BadArguments):
        sync(b, drop=(op_ids(a.root)[-1],))  # not one of b's unpushed ops
    done = sync(b, drop=(loser.op or "",))
    assert done.dropped == [(loser.op, loser.commit)]
    on_remote = [op.op_id for op in remote_ops(git_server)]
    assert kept.op in on_remote and loser.op not in on_remote
    assert "slot-2: a\n" in (b.root / "shared/board.md").read_text()
    assert loser.commit in git(b.root, "reflog", "--format=%H", "main")
    assert_clean(b.root)
    a.close()
    b.close()


def test_continue_on_a_branch_of_its_own(tmp_path: Path, git_server: GitServer) -> None:
    a, b, mine = rivals(tmp_path, git_server)
    with pytest.raises(SyncStopped):
        sync(b)
    call_ok(b, "branch", {"name": "b-board"})
    done = sync(b)
    assert done.branch == "b-board" and done.pushed
    assert mine.op in [op.op_id for op in ops_of(git_server.path("fleet"),
                                                   "refs/heads/b-board")]
    a.close()
    b.close()


def test_checkpoints_move_with_their_ops_or_are_refused(tmp_path: Path,
                                                        git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    call_ok(b, "append", {"path": "shared/log.md", "text": "b1\n"})
    call_ok(b, "checkpoint", {"name": "b-one", "message": "after b1"})
    call_ok(b, "append", {"path": "shared/log.md", "text": "b2\n"})
    call_ok(b, "restore", {"name": "b-one"})  # a restore of a checkpoint that moves
    call_ok(a, "append", {"path": "shared/log.md", "text": "a1\n"})
    sync(a)
    done = sync(b)
    assert done.checkpoints == ["b-one"]
    at = checkpoints.resolve(b, "b-one")
    assert git(b.root, "show", f"{at}:shared/log.md") == "log\na1\nb1\n"
    assert (b.root / "shared/log.md").read_text() == "log\na1\nb1\n"
    tag = git(b.root, "cat-file", "-p", "refs/tags/gitspace/b-one")
    assert "after b1" in tag and "tagger agent-1" in tag
    assert git_server.refs("fleet")["refs/tags/gitspace/b-one"] == \
        git(b.root, "rev-parse", "refs/tags/gitspace/b-one").strip()
    # The other machine gets the checkpoint with the ops, and can restore it.
    sync(a)
    assert checkpoints.resolve(a, "b-one") == at
    # A name already taken on the remote is refused, nothing changed.
    call_ok(a, "append", {"path": "shared/log.md", "text": "a2\n"})
    call_ok(a, "checkpoint", {"name": "same"})
    call_ok(b, "append", {"path": "shared/log.md", "text": "b3\n"})
    call_ok(b, "checkpoint", {"name": "same"})
    sync(a)
    before, remote_before = state(b.root), git_server.refs("fleet")
    with pytest.raises(Conflict, match="checkpoint same") as clash:
        sync(b)
    assert clash.value.message == (
        "Sync refused: checkpoint same was made here on an op not pushed yet, and origin already "
        "has a checkpoint of that name. Nothing was changed.")
    assert state(b.root) == before and git_server.refs("fleet") == remote_before
    assert_never_forced(git_server)
    a.close()
    b.close()


def test_outside_edits_are_carried_as_recorded(tmp_path: Path, git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    (b.root / "notes.md").write_text("typed by a person\n")
    snap = b.snapshot()
    assert snap.ok and snap.op
    recorded = message_of(b.root)
    call_ok(a, "append", {"path": "shared/log.md", "text": "a\n"})
    sync(a)
    sync(b)
    assert message_of(b.root) == recorded  # same message: carried, not re-run
    assert (b.root / "notes.md").read_text() == "typed by a person\n"
    assert op_ids(b.root)[-1] == snap.op
    a.close()
    b.close()


def test_undo_on_one_machine_of_an_op_made_on_another(tmp_path: Path,
                                                      git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    made = call_ok(a, "append", {"path": "shared/log.md", "text": "a's line\n"})
    call_ok(b, "append", {"path": "shared/log.md", "text": "b's line\n"})
    sync(b)
    sync(a)  # a's op is re-run on top of b's: a new commit, the same op id
    sync(b)
    assert undo.op_target(b, made.op or "")[1].sha != made.commit
    undone = call_ok(b, "undo", {"op": made.op})
    sync(b)
    sync(a)
    assert (a.root / "shared/log.md").read_text() == "log\nb's line\n"
    # The same agent on a third machine: its plain undo walks back to the op made on machine a.
    call_ok(a, "append", {"path": "shared/log.md", "text": "a again\n"})
    sync(a)
    c = machine(tmp_path, git_server, 2, agent="agent-0")
    again = call_ok(c, "undo", {})
    assert again.op and ledger.parse_message(message_of(c.root)).undo_of == (  # type: ignore[union-attr]
        op_ids(a.root)[-1],)
    sync(c)
    sync(a)
    assert (a.root / "shared/log.md").read_text() == "log\nb's line\n"
    assert [op.op_id for op in remote_ops(git_server)].count(undone.op) == 1
    for ws in (a, b, c):
        assert_clean(ws.root)
        ws.close()


def test_sync_needs_a_named_remote_and_a_gitspace_checkout(tmp_path: Path,
                                                           git_server: GitServer) -> None:
    a = seed(tmp_path, git_server)
    with pytest.raises(BadArguments, match="not a remote"):
        sync(a, git_server.url("fleet"))
    with pytest.raises(BadArguments, match="not a remote") as nowhere:
        sync(a, "nowhere")
    assert nowhere.value.hint is not None and "git remote add origin URL" in nowhere.value.hint
    a.close()


def test_a_sync_reads_a_git_daemon_with_protocol_v0(tmp_path: Path, git_server: GitServer) -> None:
    """git's v2 client waits on TCP's delayed acknowledgement over git:// (about 40 ms a read):
    every read a sync makes there, the look and the fetch, asks for no protocol version, as the
    daemon's own log of each request shows. (The clones' ``git clone`` asked for v2.)"""
    a = seed(tmp_path, git_server)
    b = machine(tmp_path, git_server, 1)
    assert 'Extended attribute "protocol": version=2' in git_server.log.read_text()
    call_ok(a, "append", {"path": "shared/log.md", "text": "a1\n"})
    sync(a)
    call_ok(b, "append", {"path": "shared/log.md", "text": "b1\n"})
    mark = git_server.log.stat().st_size
    done = sync(b)  # a read of the refs, a fetch of a's op, a re-run, a push
    assert (done.pulled, done.rebased, done.pushed) == (1, 1, 1)
    requests = git_server.log.read_bytes()[mark:].decode(errors="replace")
    assert requests.count("Request upload-pack") >= 2, requests
    assert "protocol" not in requests, requests
    assert_never_forced(git_server)
    assert_clean(b.root)
