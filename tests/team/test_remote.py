"""team/remote.py: ``pull`` is one change of the writer (the branch, its files and index, and the
checkpoints it brings, moved together or not at all), and ``push`` never forces: the remote's
refs move only forward, and a branch that moved there is refused, changing nothing anywhere.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import call_ok, git

import gitspace
from gitspace import faults
from gitspace.errors import GitspaceError, WriteFailed
from gitspace.storage import remotes
from gitspace.team import remote


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[gitspace.Workspace, Path]]:
    """A workspace and a clone of it through a bare remote; the clone is one op and a
    checkpoint ahead, pushed."""
    ws = gitspace.init(tmp_path / "ws", agent="ann")
    call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(ws.root, "remote", "add", "origin", str(bare))
    remote.push(ws, "origin")
    git(tmp_path, "clone", "-q", str(bare), str(tmp_path / "clone"))
    with gitspace.open(tmp_path / "clone", agent="bob") as theirs:
        call_ok(theirs, "create", {"path": "b.txt", "file_text": "from bob\n"})
        call_ok(theirs, "checkpoint", {"name": "bobs"})
        remote.push(theirs, "origin")
    yield ws, tmp_path / "clone"
    ws.close()


def test_pull_moves_the_branch_files_and_checkpoints_in_one_change(
        two: tuple[gitspace.Workspace, Path]) -> None:
    ws, _ = two
    refs, index = git(ws.root, "for-each-ref"), (ws.root / ".git" / "index").read_bytes()
    with faults.inject("file.write", errno.EIO), pytest.raises(WriteFailed):
        remote.pull(ws, "origin")
    assert git(ws.root, "for-each-ref") == refs  # neither the branch nor the checkpoint
    assert (ws.root / ".git" / "index").read_bytes() == index and not (ws.root / "b.txt").exists()
    with ExitStack() as stack:
        journals = stack.enter_context(faults.inject("journal.write", times=0))
        done = remote.pull(ws, "origin")
    assert journals.hits == 1 and sorted(ref for ref, _ in done.moved) == [
        "refs/heads/main", "refs/tags/gitspace/bobs"]
    assert (ws.root / "b.txt").read_text() == "from bob\n"
    assert git(ws.root, "status", "--porcelain") == ""


def test_push_never_forces_a_branch_that_moved_there(two: tuple[gitspace.Workspace, Path]) -> None:
    ws, clone = two
    call_ok(ws, "create", {"path": "c.txt", "file_text": "ann's, not pulled\n"})
    theirs = git(clone, "rev-parse", "main").strip()
    with pytest.raises(GitspaceError, match="has ops on main that this clone does not have"):
        remote.push(ws, "origin")
    assert git(clone, "ls-remote", "origin", "refs/heads/main").split()[0] == theirs


def test_reads_from_a_git_daemon_speak_protocol_v0_and_other_remotes_keep_v2(
        tmp_path: Path) -> None:
    """Over git:// git's v2 client waits on TCP's delayed acknowledgement (about 40 ms a read);
    v0 is asked for there alone, as git resolves the URL, and a changed URL is seen at once."""
    repo = gitspace.init(tmp_path / "ws", agent="ann").repo
    for name, url in (("daemon", "git://127.0.0.1:9/x.git"), ("https", "https://example.com/x"),
                      ("path", str(tmp_path / "remote.git")), ("mirror", "https://mirror/x")):
        git(repo.root, "remote", "add", name, url)
    git(repo.root, "config", "url.git://127.0.0.1:9/.insteadOf", "https://mirror/")
    v0 = ("-c", "protocol.version=0")
    assert [remotes._reading(repo, name) for name in ("daemon", "https", "path", "mirror")] == [
        v0, (), (), v0]
    assert remotes._reading(repo, "git://host/y.git") == v0  # a URL given as the remote
    assert remotes._reading(repo, "nowhere") == ()
    config = repo.commondir / "config"
    stamp = config.stat().st_mtime_ns
    git(repo.root, "remote", "set-url", "daemon", "https://example.com/y")
    os.utime(config, ns=(stamp + 1_000_000, stamp + 1_000_000))  # however coarse the clock
    assert remotes._reading(repo, "daemon") == ()
