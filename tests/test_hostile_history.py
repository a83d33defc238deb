"""Hostile history: commits whose trees try to make gitspace write outside the workspace.

The classic attack: one commit has ``lnk -> /some/outside/dir``, a later one ``lnk/file``. A
writer that writes ``lnk/file`` before it removes ``lnk`` (or that resolves the path through
the link at the moment of writing) writes into the outside folder. Every writer is tried:
switch, pull, replay (with and without scripts), replay --onto, restore, undo, merge. And tree
entries git itself refuses (``..``, ``.git``, a name with a slash), which objects fetched from a
remote can still hold.

After every scenario: the outside folder is byte-for-byte unchanged, ``git fsck --strict``
passes and ``git status`` is clean.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import call_ok, git, head
from hostile import (
    Link,
    Outside,
    Planted,
    assert_sound,
    blob,
    commit,
    drop,
    fsck,
    plant,
    raw_tree,
    tree,
)
from user_repo import checkout_state, make_user_repo, status

import gitspace
from gitspace.errors import GitspaceError
from gitspace.replay.engine import replay
from gitspace.replay.onto import replay_onto
from gitspace.team import attach, merge
from gitspace.team import remote as sync

pytestmark = pytest.mark.usefixtures("scratch_dirs")  # replay's folders: none left after


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[gitspace.Workspace]:
    workspace = gitspace.init(tmp_path / "ws", agent="tester")
    call_ok(workspace, "create", {"path": "notes.txt", "file_text": "notes\n"})
    try:
        yield workspace
    finally:
        workspace.close()


def _planted(ws: gitspace.Workspace, outside: Outside) -> Planted:
    return plant(ws.root, head(ws.root), outside.path)


def _is_plain_folder_with_file(root: Path) -> None:
    lnk = root / "lnk"
    assert lnk.is_dir() and not lnk.is_symlink()
    assert (lnk / "file").read_text() == "written through the link?\n"


# -- the link, then a file beneath it ---------------------------------------------------------


def test_switch_removes_the_link_before_writing_beneath_it(ws: gitspace.Workspace,
                                                           outside: Outside) -> None:
    p = _planted(ws, outside)
    git(ws.root, "branch", "with-link", p.link)
    git(ws.root, "branch", "with-file", p.file)
    call_ok(ws, "switch", {"name": "with-link"})
    assert (ws.root / "lnk").is_symlink()
    call_ok(ws, "switch", {"name": "with-file"})
    outside.unchanged()
    _is_plain_folder_with_file(ws.root)
    assert_sound(ws.root)
    call_ok(ws, "switch", {"name": "with-link"})  # and back: the folder goes, the link returns
    assert (ws.root / "lnk").is_symlink()
    outside.unchanged()
    assert_sound(ws.root)


def test_pull_removes_the_link_before_writing_beneath_it(tmp_path: Path,
                                                         outside: Outside) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    with gitspace.init(tmp_path / "alice", agent="alice") as alice:
        git(alice.root, "remote", "add", "origin", str(bare))
        p = plant(alice.root, head(alice.root), outside.path)
        git(alice.root, "push", "-q", "origin", f"{p.link}:refs/heads/main")
    git(tmp_path, "clone", "-q", str(bare), str(tmp_path / "bob"))
    assert (tmp_path / "bob" / "lnk").is_symlink()
    git(tmp_path / "alice", "push", "-q", "origin", f"{p.file}:refs/heads/main")
    with gitspace.open(tmp_path / "bob", agent="bob") as bob:
        report = sync.pull(bob)
        assert ("refs/heads/main", f"{p.link[:12]}..{p.file[:12]} (fast-forward)") in report.moved
    outside.unchanged()
    _is_plain_folder_with_file(tmp_path / "bob")
    assert_sound(tmp_path / "bob")


@pytest.mark.parametrize("scripts", [True, False], ids=["scripts", "no-scripts"])
def test_replay_never_writes_outside_its_scratch_repository(ws: gitspace.Workspace,
                                                            outside: Outside,
                                                            scripts: bool) -> None:
    p = _planted(ws, outside)
    # The planted commits are plain commits, none re-executed: allowed, since writes are the point.
    report = replay(ws, p.file, p.base, scripts=scripts, allow_empty=True)
    outside.unchanged()
    assert report.ok, report.divergence
    assert_sound(ws.root)


def test_replay_onto_never_writes_outside_its_scratch_repository(ws: gitspace.Workspace,
                                                                 outside: Outside) -> None:
    p = _planted(ws, outside)
    call_ok(ws, "create", {"path": "later.txt", "file_text": "main moved on\n"})
    report = replay_onto(ws, p.file, head(ws.root), "moved", p.base)
    outside.unchanged()
    assert report.ok, report.divergence
    assert git(ws.root, "show", "moved:lnk/file") == "written through the link?\n"
    assert_sound(ws.root)


def test_restore_removes_the_link_before_writing_beneath_it(ws: gitspace.Workspace,
                                                            outside: Outside) -> None:
    p = _planted(ws, outside)
    git(ws.root, "branch", "with-link", p.link)
    git(ws.root, "tag", "-a", "-m", "planted", "gitspace/planted", p.file)
    call_ok(ws, "switch", {"name": "with-link"})
    result = call_ok(ws, "restore", {"name": "planted"})
    outside.unchanged()
    assert result.external_op is None, "restore recorded a phantom outside edit"
    _is_plain_folder_with_file(ws.root)
    assert_sound(ws.root)


def test_undo_of_a_recorded_link_never_writes_through_it(tmp_path: Path,
                                                         outside: Outside) -> None:
    root = tmp_path / "ws"
    with gitspace.init(root) as ws:  # a person: undo may take back outside edits
        call_ok(ws, "create", {"path": "lnk/file", "file_text": "written through the link?\n"})
        (root / "lnk" / "file").unlink()
        (root / "lnk").rmdir()
        os.symlink(outside.path, root / "lnk")
        swapped = ws.snapshot()
        assert swapped.op is not None
        undone = call_ok(ws, "undo", {})
        assert undone.external_op is None
    outside.unchanged()
    assert (root / "lnk" / "file").read_text() == "written through the link?\n"
    assert not (root / "lnk").is_symlink()
    assert_sound(root)


def test_redo_after_a_link_was_planted_never_writes_through_it(tmp_path: Path,
                                                               outside: Outside) -> None:
    """An op wrote ``lnk/file``; it was undone; then another process put ``lnk -> outside``
    where the folder was. Redo refuses with a hint: it never writes through the link, and never
    removes a link it did not put there (the user's, until recorded)."""
    root = tmp_path / "ws"
    with gitspace.init(root) as ws:
        call_ok(ws, "create", {"path": "lnk/file", "file_text": "written through the link?\n"})
        call_ok(ws, "undo", {})
        assert not (root / "lnk").exists()
        os.symlink(outside.path, root / "lnk")
        tip = head(root)
        result = ws.call("redo", {})
        assert not result.ok and result.error is not None and result.error.hint, result.text
        assert "lnk" in result.text and head(root) == tip
        assert os.readlink(root / "lnk") == str(outside.path)
        outside.unchanged()
        ws.snapshot()  # the link is recorded like any outside edit
    outside.unchanged()
    assert_sound(root)


def test_merge_into_the_checkout_never_writes_through_a_link(tmp_path: Path,
                                                             outside: Outside) -> None:
    user = make_user_repo(tmp_path / "user")
    a = attach.attach(user, "bob")
    p = plant(user, git(user, "rev-parse", "HEAD").strip(), outside.path)
    git(user, "update-ref", "refs/heads/agent/bob", p.file, head(a.path))
    git(a.path, "reset", "-q", "--hard", p.file)  # bob's worktree follows its branch
    before, listed = checkout_state(user), status(user)
    done = merge.merge(user, "bob")
    assert done.checkout and "lnk/file" in done.files
    outside.unchanged()
    assert (user / "lnk" / "file").read_text() == "written through the link?\n"
    after = checkout_state(user)
    assert {k: v for k, v in after["files"].items() if not k.startswith("lnk/")} \
        == before["files"]
    assert status(user) == listed
    fsck(user)


def test_merge_refuses_when_the_users_own_link_stands_where_a_folder_goes(
        tmp_path: Path, outside: Outside) -> None:
    user = make_user_repo(tmp_path / "user")
    a = attach.attach(user, "bob")
    with gitspace.open(a.path, agent="bob") as bob:
        call_ok(bob, "create", {"path": "lnk/file", "file_text": "bob's\n"})
    os.symlink(outside.path, user / "lnk")  # the user's own, untracked
    before, listed = checkout_state(user), status(user)
    with pytest.raises(GitspaceError, match="lnk"):
        merge.merge(user, "bob")
    outside.unchanged()
    assert checkout_state(user) == before and status(user) == listed
    assert os.readlink(user / "lnk") == str(outside.path)
    fsck(user)


# -- a link planted deeper, and chains of links -----------------------------------------------


def test_a_link_to_a_link_and_a_relative_escape_through_switch(ws: gitspace.Workspace,
                                                               outside: Outside) -> None:
    rel = os.path.relpath(outside.path, ws.root / "a")
    base = head(ws.root)
    links = commit(ws.root, base, {"a/up": Link(rel), "b": Link("a/up"), "c": Link("b/sub")})
    files = commit(ws.root, links, {"a/up": None, "b": None, "c": None,
                                    "a/up/victim.txt": "x\n", "b/victim.txt": "y\n",
                                    "c/deep.txt": "z\n"})
    git(ws.root, "branch", "links", links)
    git(ws.root, "branch", "files", files)
    call_ok(ws, "switch", {"name": "links"})
    call_ok(ws, "switch", {"name": "files"})
    outside.unchanged()
    assert (ws.root / "c" / "deep.txt").read_text() == "z\n"
    assert_sound(ws.root)


# -- names git refuses, in trees a remote can still send --------------------------------------


@pytest.mark.parametrize("name", [b"..", b".git", b".GIT", b".git. ", b"x/../.."],
                         ids=["dotdot", "dotgit", "DOTGIT", "dotgit-dot-space", "slash"])
def test_switch_refuses_a_tree_that_names_a_path_outside_or_inside_git(
        ws: gitspace.Workspace, outside: Outside, name: bytes) -> None:
    root = ws.root
    payload = blob(root, b"#!/bin/sh\necho pwned > /dev/null\n")
    hooks = raw_tree(root, [("100755", b"post-checkout", payload), ("100644", b"victim.txt",
                                                                     payload)])
    escape = raw_tree(root, [("40000", b"outside", hooks), ("40000", b"hooks", hooks)])
    top = tree(root, head(root), {})
    entries = git(root, "ls-tree", top).splitlines()
    listed = [(line.split()[0], line.split("\t", 1)[1].encode(), line.split()[2])
              for line in entries]
    evil = raw_tree(root, sorted([*listed, ("40000", name, escape)], key=lambda e: e[1]))
    git(root, "branch", "evil", commit(root, head(root), {}, tree_sha=evil))
    before = {p.name for p in root.parent.iterdir()}
    hooks_before = sorted(os.listdir(root / ".git" / "hooks"))
    result = ws.call("switch", {"name": "evil"})
    assert not result.ok and result.error is not None
    assert "refuse" in result.text.lower() or "not a path" in result.text.lower(), result.text
    outside.unchanged()
    assert {p.name for p in root.parent.iterdir()} == before
    assert sorted(os.listdir(root / ".git" / "hooks")) == hooks_before
    assert git(root, "symbolic-ref", "--short", "HEAD").strip() == "main"
    drop(root, "refs/heads/evil")
    assert_sound(root)


def test_replay_reports_a_tree_that_names_a_path_outside(ws: gitspace.Workspace,
                                                         outside: Outside) -> None:
    root = ws.root
    payload = blob(root, b"pwned\n")
    escape = raw_tree(root, [("100644", b"victim.txt", payload)])
    escape = raw_tree(root, [("40000", b"outside", escape)])
    for _ in range(3):  # the scratch work tree sits three folders below tmp_path
        escape = raw_tree(root, [("40000", b"..", escape)])
    top = tree(root, head(root), {})
    listed = [(line.split()[0], line.split("\t", 1)[1].encode(), line.split()[2])
              for line in git(root, "ls-tree", top).splitlines()]
    evil = raw_tree(root, sorted([*listed, *_entries(root, escape)], key=lambda e: e[1]))
    base = head(root)
    tip = commit(root, base, {}, tree_sha=evil)
    for scripts in (True, False):
        report = replay(ws, tip, base, scripts=scripts)
        assert report.divergence is not None and "refused the path" in report.divergence.reason
        outside.unchanged()
    drop(root)
    assert_sound(root)


def _entries(root: Path, sha: str) -> list[tuple[str, bytes, str]]:
    """The entries of tree ``sha``, read back byte for byte."""
    data = git(root, "cat-file", "tree", sha).encode("utf-8", "surrogateescape")
    out = []
    while data:
        head_, _, rest = data.partition(b"\0")
        mode, _, name = head_.partition(b" ")
        out.append((mode.decode(), name, rest[:20].hex()))
        data = rest[20:]
    return out


# -- what the history holds is never read through a link either ------------------------------


def test_snapshot_never_records_an_outside_file_seen_through_a_link(ws: gitspace.Workspace,
                                                                    outside: Outside) -> None:
    """A tracked folder swapped for a link: ``dir/victim.txt`` is gone (as git sees it), and
    the outside ``victim.txt`` it now "shows" is never read into a commit."""
    root = ws.root
    call_ok(ws, "create", {"path": "dir/victim.txt", "file_text": "tracked\n"})
    (root / "dir" / "victim.txt").unlink()
    (root / "dir").rmdir()
    os.symlink(outside.path, root / "dir")
    result = ws.snapshot()
    assert result.ok and result.op is not None
    assert git(root, "ls-tree", "HEAD", "dir").split()[0] == "120000"
    for rev in git(root, "rev-list", "HEAD").split():
        if "dir/victim.txt" in git(root, "ls-tree", "-r", "--name-only", rev).splitlines():
            assert "outside" not in git(root, "show", f"{rev}:dir/victim.txt"), rev
    outside.unchanged()
    assert_sound(root)


def test_a_planted_gitspace_link_never_receives_session_files(ws: gitspace.Workspace,
                                                              outside: Outside) -> None:
    """History may hold ``.gitspace -> /outside``: the path policy refuses to check it out, and
    a link planted there some other way still never receives session files (they are written by
    the work-tree writer too)."""
    from gitspace.agent.session import Session
    from gitspace.storage.files import InTheWay

    git(ws.root, "branch", "planted", commit(ws.root, head(ws.root),
                                             {".gitspace": Link(str(outside.path))}))
    refused = ws.call("switch", {"name": "planted"})
    assert not refused.ok and ".gitspace" in refused.text and ws.branch() == "main"
    os.symlink(outside.path, ws.root / ".gitspace")  # planted by some other process
    session = Session.new(ws.root, "a task", agent="tester", client="scripted", scripted=True)
    with pytest.raises(InTheWay, match="symbolic link"):
        session.save()
    with pytest.raises(InTheWay), session.running():
        pass
    outside.unchanged()
    (ws.root / ".gitspace").unlink()
    assert_sound(ws.root)


# -- trees git itself would refuse: malformed, not merely odd ---------------------------------


def _with_entries(root: Path, extra: list[tuple[str, bytes, str]]) -> str:
    """A commit on HEAD whose top folder also holds ``extra``, written byte for byte."""
    listed = _entries(root, tree(root, head(root), {}))
    return commit(root, head(root), {}, tree_sha=raw_tree(root, [*listed, *extra]))


MALFORMED = {
    # A link and a folder of one name: git sorts them apart, so a tree can hold both.
    "link-and-folder": lambda root, out: [("120000", b"lnk", blob(root, os.fsencode(out))),
                                          ("40000", b"lnk", _sub(root))],
    "duplicate-file": lambda root, out: [("100644", b"d", blob(root, b"one\n")),
                                         ("100755", b"d", blob(root, b"two\n"))],
    "mode-without-kind": lambda root, out: [("644", b"p", blob(root, b"x\n"))],
    "folder-that-is-a-file": lambda root, out: [("40000", b"t", blob(root, b"x\n"))],
    "file-that-is-a-folder": lambda root, out: [("100644", b"t", _sub(root))],
    "submodule": lambda root, out: [("160000", b"mod", head(root))],
    "missing-object": lambda root, out: [("100644", b"m", "1" * 40)],
}


SENDABLE = {"link-and-folder", "duplicate-file", "mode-without-kind", "submodule"}


def _sub(root: Path) -> str:
    return raw_tree(root, [("100644", b"file", blob(root, b"written through the link?\n"))])


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_a_malformed_tree_is_refused_by_switch_pull_and_replay(tmp_path: Path, outside: Outside,
                                                               kind: str) -> None:
    """A tree naming one path twice (a link and a folder, say) left the index holding an entry
    the tree did not: ``git status`` dirty for good. Every such tree is now an expected error,
    and replay reports it as the point where the history diverges."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    with gitspace.init(tmp_path / "alice", agent="alice") as alice:
        call_ok(alice, "create", {"path": "notes.txt", "file_text": "notes\n"})
        git(alice.root, "remote", "add", "origin", str(bare))
        git(alice.root, "push", "-q", "origin", "main")
        git(tmp_path, "clone", "-q", str(bare), str(tmp_path / "bob"))
        base = head(alice.root)
        evil = _with_entries(alice.root, MALFORMED[kind](alice.root, outside.path))
        git(alice.root, "branch", "evil", evil)
        before = checkout_state(alice.root)
        refused = alice.call("switch", {"name": "evil"})
        assert not refused.ok and refused.error is not None and refused.error.hint, refused.text
        assert alice.branch() == "main" and checkout_state(alice.root) == before
        report = replay(alice, evil, base, scripts=False)
        assert not report.ok and report.divergence is not None
        assert report.divergence.commit == evil
        if kind in SENDABLE:  # (git will not send a missing or mistyped object)
            git(alice.root, "push", "-q", "origin", f"{evil}:refs/heads/main")
    with gitspace.open(tmp_path / "bob", agent="bob") as bob:
        before = checkout_state(bob.root)
        if kind in SENDABLE:
            with pytest.raises(GitspaceError) as pulled:
                sync.pull(bob)
            assert pulled.value.hint
        assert head(bob.root) == base and checkout_state(bob.root) == before
    outside.unchanged()
    for root in (tmp_path / "alice", tmp_path / "bob"):  # the attacker's objects leave
        git(root, "remote", "remove", "origin")
        drop(root, *(["refs/heads/evil"] if root.name == "alice" else []))
        assert_sound(root)


def test_a_mode_git_reads_as_a_plain_file_is_checked_out_as_git_does(ws: gitspace.Workspace,
                                                                      outside: Outside) -> None:
    """``100664`` is a plain file to git (its canon_mode): switching to it and back left the
    index at 100664, so gitspace took its own checkout for an outside edit and refused to
    switch back."""
    root = ws.root
    git(root, "branch", "odd", _with_entries(root, [("100664", b"o", blob(root, b"odd\n"))]))
    call_ok(ws, "switch", {"name": "odd"})
    assert (root / "o").read_text() == "odd\n"
    assert git(root, "ls-files", "-s", "o").split()[0] == "100644"
    assert git(root, "status", "--porcelain") == ""
    call_ok(ws, "switch", {"name": "main"})
    assert not (root / "o").exists()
    outside.unchanged()
    drop(root, "refs/heads/odd")
    assert_sound(root)
