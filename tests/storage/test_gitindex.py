"""The index gitspace writes is one git reads as its own: clean status, entries equal HEAD, and
indexes in formats the writer does not handle fall back to git and still end clean."""

from __future__ import annotations

import functools
import hashlib
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import assert_clean, call_ok, git, git_env, git_run

import gitspace
from gitspace import faults
from gitspace.errors import LockTimeout
from gitspace.storage import gitindex

FILES = 2000


def _populate(root: Path) -> list[str]:
    paths = []
    for i in range(FILES):
        rel = f"d{i % 7}/e{i % 11}/f{i % 3}/file{i}.txt"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"file {i}\n" + "line\n" * (i % 5))
        paths.append(rel)
    return paths


def assert_index_matches_head(root: Path) -> None:
    index = [ln.split(None, 3) for ln in git(root, "ls-files", "-s").splitlines()]
    tree = [ln.split(None, 3) for ln in git(root, "ls-tree", "-r", "HEAD").splitlines()]
    assert [(mode, sha, path) for mode, sha, _stage, path in index] == [
        (mode, sha, path) for mode, _kind, sha, path in tree]
    assert git(root, "diff-index", "--cached", "HEAD") == ""
    assert_clean(root)


def _many_ops(ws: gitspace.Workspace, paths: list[str], seed: int, count: int = 40) -> None:
    rng = random.Random(seed)
    for n in range(count):
        rel = rng.choice(paths)
        kind = n % 5
        if kind == 0:
            call_ok(ws, "append", {"path": rel, "text": f"op {n}\n"})
        elif kind == 1:
            call_ok(ws, "str_replace", {"path": rel, "old_str": "file", "new_str": f"F{n}"})
        elif kind == 2:
            new = f"new/{n}/x{n}.txt"
            call_ok(ws, "create", {"path": new, "file_text": f"{n}\n"})
            paths.append(new)
        elif kind == 3:
            call_ok(ws, "delete", {"path": rel})
            paths.remove(rel)
        else:
            new = f"moved/{n}.txt"
            call_ok(ws, "rename", {"old_path": rel, "new_path": new})
            paths[paths.index(rel)] = new


def test_many_ops_on_a_large_nested_tree_keep_the_index_exact(ws_root: Path) -> None:
    ws_root.mkdir()
    paths = _populate(ws_root)
    with gitspace.init(ws_root, agent="tester") as ws:
        assert git(ws_root, "ls-files").count("\n") == FILES + 1
        assert_index_matches_head(ws_root)
        _many_ops(ws, paths, seed=1)
        assert_index_matches_head(ws_root)
        call_ok(ws, "undo", {"count": 5})
        call_ok(ws, "checkpoint", {"name": "cp"})
        call_ok(ws, "delete", {"path": "d3"})
        assert not (ws_root / "d3").exists()
        assert_index_matches_head(ws_root)
        call_ok(ws, "restore", {"name": "cp"})
        assert_index_matches_head(ws_root)


def test_our_index_round_trips_a_git_written_index(ws: gitspace.Workspace) -> None:
    root = ws.root
    for i in range(20):
        (root / f"f{i}.txt").write_text(f"{i}\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=x", "-c", "user.email=y@z", "commit", "-q", "-m", "by git")
    git(root, "update-index", "--refresh")
    listing = git(root, "ls-files", "-s", "--debug")
    index_path = root / ".git" / "index"
    gitindex.store(index_path, gitindex.parse(index_path.read_bytes()))
    assert git(root, "ls-files", "-s", "--debug") == listing
    assert_clean(root)


def _prepare(ws: gitspace.Workspace) -> None:
    for i in range(30):
        call_ok(ws, "create", {"path": f"dir{i % 3}/f{i}.txt", "file_text": f"{i}\n"})


@pytest.mark.parametrize("setup", [
    ["update-index", "--index-version", "3"],
    ["update-index", "--index-version", "4"],
    ["update-index", "--split-index"],
    ["update-index", "--untracked-cache"],
])
def test_index_formats_written_by_git_still_work(ws: gitspace.Workspace, setup: list[str]) -> None:
    root = ws.root
    _prepare(ws)
    git(root, *setup)
    git(root, "status", "--porcelain")  # let git rewrite the index in that format
    for n in range(6):
        call_ok(ws, "append", {"path": f"dir{n % 3}/f{n}.txt", "text": "more\n"})
    call_ok(ws, "create", {"path": "dir9/new.txt", "file_text": "new\n"})
    call_ok(ws, "delete", {"path": "dir2/f2.txt"})
    call_ok(ws, "rename", {"old_path": "dir1", "new_path": "dir7"})
    call_ok(ws, "undo", {})
    (root / "outside.txt").write_text("x\n")
    assert ws.snapshot().ok
    assert (root / "dir0" / "f0.txt").read_text() == "0\nmore\n"
    assert_index_matches_head(root)


def test_skip_worktree_flag_in_a_version_3_index_is_preserved(ws: gitspace.Workspace) -> None:
    root = ws.root
    _prepare(ws)
    git(root, "update-index", "--skip-worktree", "dir0/f0.txt")
    assert (root / ".git" / "index").read_bytes()[4:8] == b"\0\0\0\3"  # git upgraded it
    assert gitindex.parse((root / ".git" / "index").read_bytes()).version == 3  # ours to write
    for n in range(1, 6):
        call_ok(ws, "append", {"path": f"dir{n % 3}/f{n}.txt", "text": "more\n"})
    flags = {ln[2:]: ln[0] for ln in git(root, "ls-files", "-v").splitlines()}
    assert flags["dir0/f0.txt"] == "S" and flags["dir1/f1.txt"] == "H"
    assert_index_matches_head(root)
    # An op on the skip-worktree path itself replaces its entry with a plain one.
    call_ok(ws, "append", {"path": "dir0/f0.txt", "text": "more\n"})
    assert_index_matches_head(root)


def test_index_lock_held_by_git_makes_the_op_fail_cleanly(
    ws: gitspace.Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    call_ok(ws, "create", {"path": "a.txt", "file_text": "1\n"})
    monkeypatch.setattr(gitindex, "store", functools.partial(gitindex.store, wait=0.1))
    lock = ws.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    before = git(ws.root, "rev-parse", "HEAD").strip()
    result = ws.call("append", {"path": "a.txt", "text": "2\n"})
    assert not result.ok and isinstance(result.error, LockTimeout)
    assert result.error.message == f"{lock} exists: another git process is updating the index."
    assert result.error.hint == "If no git process is running, remove that file and try again."
    assert lock.read_bytes() == b""  # someone else's lock is left alone
    lock.unlink()
    assert git(ws.root, "rev-parse", "HEAD").strip() == before
    assert (ws.root / "a.txt").read_text() == "1\n"
    assert_index_matches_head(ws.root)


def test_an_index_another_writer_replaced_meanwhile_is_loaded_again(
        ws: gitspace.Workspace, tmp_path: Path) -> None:
    """git updates the index between our load and our lock (here: at the instant the lock is
    taken, by a fault point armed with that write). Storing ours over it would lose their entry:
    the op loads theirs again and redoes its own change on it."""
    call_ok(ws, "create", {"path": "a.txt", "file_text": "1\n"})
    (ws.root / "theirs.txt").write_text("staged by git\n")
    index_path = ws.root / ".git" / "index"
    theirs = tmp_path / "their-index"

    def git_adds_a_file() -> None:
        shutil.copy(index_path, theirs)
        env = {**git_env(), "GIT_INDEX_FILE": str(theirs)}
        subprocess.run(["git", "add", "theirs.txt"], cwd=ws.root, env=env, check=True)
        os.replace(theirs, index_path)  # their rename, just before our lock

    with faults.inject("index.store", git_adds_a_file) as armed:
        call_ok(ws, "append", {"path": "a.txt", "text": "2\n"})
    assert armed.fired == 1 and armed.hits == 2  # stored once more, on their index
    assert git(ws.root, "ls-files", "theirs.txt") == "theirs.txt\n"  # their change survived
    assert git(ws.root, "ls-files", "-s", "a.txt").split()[1] == \
        git(ws.root, "rev-parse", "HEAD:a.txt").strip()  # and ours is on it
    assert git(ws.root, "diff-index", "--cached", "--name-only", "HEAD") == "theirs.txt\n"


def test_store_refuses_an_index_replaced_since_it_was_loaded(ws: gitspace.Workspace) -> None:
    index_path = ws.root / ".git" / "index"
    index = gitindex.load(index_path)
    (ws.root / "x.txt").write_text("x\n")
    git(ws.root, "add", "x.txt")
    with pytest.raises(gitindex.IndexChanged, match=f"^{index_path}$"):
        gitindex.store(index_path, index)
    assert "x.txt" in git(ws.root, "ls-files")


def test_a_file_name_that_is_not_utf_8_in_an_index_only_git_writes(ws: gitspace.Workspace) -> None:
    """A version 4 index goes through git update-index, which takes the name's own bytes."""
    git(ws.root, "update-index", "--index-version", "4")
    name = os.path.join(os.fsencode(ws.root), b"caf\xe9.txt")
    with open(name, "wb") as out:
        out.write(b"x\n")
    assert ws.snapshot().ok
    assert git_run(ws.root, "ls-files", "-z").stdout.split(b"\0").count(b"caf\xe9.txt") == 1
    assert git(ws.root, "diff-files", "--name-only") == ""  # refreshed: git trusts the stat data
    assert_index_matches_head(ws.root)


def _index_of(ws: gitspace.Workspace, info: str) -> Path:
    """The workspace's index with ``git update-index --index-info`` lines applied by git."""
    git(ws.root, "update-index", "--index-info", input=info.encode())
    return ws.root / ".git" / "index"


def _stages(ws: gitspace.Workspace, rel: str) -> str:
    """Stages 1, 2 and 3 of ``rel`` (a merge conflict), as --index-info lines."""
    sha = ws.repo.write_blob(b"conflict\n")
    return "".join(f"100644 {sha} {stage}\t{rel}\n" for stage in (1, 2, 3))


def test_an_entry_with_no_stat_data_is_the_one_git_writes_for_cacheinfo(
        ws: gitspace.Workspace) -> None:
    """No stat (the file is not on disk): zeros, as git writes them, so git re-checks it."""
    sha = ws.repo.write_blob(b"absent\n")
    index_path = _index_of(ws, f"100644 {sha}\tabsent.txt\n")
    by_git = gitindex.parse(index_path.read_bytes()).raw[b"absent.txt"]
    ours = gitindex.Index()
    ours.set("absent.txt", sha, 0o100644, None)
    assert ours.raw[b"absent.txt"] == by_git


def test_a_mandatory_extension_at_the_very_end_is_not_read_past(ws: gitspace.Workspace) -> None:
    """An empty extension whose header ends where the checksum starts is still an extension:
    a lowercase (mandatory) one this writer does not know makes it hand the index to git."""
    data = (ws.root / ".git" / "index").read_bytes()[:-20] + b"abcd\0\0\0\0"
    data += hashlib.sha1(data).digest()
    with pytest.raises(gitindex.IndexUnsupported, match=r"^mandatory index extension b'abcd'$"):
        gitindex.parse(data)


def test_putting_back_a_conflicted_path_restores_its_stages(ws: gitspace.Workspace) -> None:
    """What a rolled-back op puts back is the index it found, merge conflicts included."""
    index_path = _index_of(ws, _stages(ws, "c.txt"))
    before = index_path.read_bytes()
    listing = git(ws.root, "ls-files", "-s")
    index = gitindex.load(index_path)
    saved = index.entries_of(["c.txt"])
    index.set("c.txt", ws.repo.write_blob(b"resolved\n"), 0o100644, None)
    index.put_back(saved)
    gitindex.store(index_path, index)
    assert git(ws.root, "ls-files", "-s") == listing
    assert index_path.read_bytes() == before


def test_a_file_in_place_of_a_conflicted_folder_drops_the_conflict(
        ws: gitspace.Workspace) -> None:
    sha = ws.repo.write_blob(b"a file now\n")
    # (beside it, names that sort between "fd/" and anything longer: "0" sorts right after "/")
    index_path = _index_of(ws, _stages(ws, "fd/x.txt") + "".join(
        f"100644 {sha}\t{name}\n" for name in ("fd.txt", "fd0", "fdA", "fd_x")))
    index = gitindex.load(index_path)
    index.remove_conflicts("fd")
    index.set("fd", sha, 0o100644, None)
    gitindex.store(index_path, index)
    listing = [line.split("\t") for line in git(ws.root, "ls-files", "-s").splitlines()]
    assert [(path, entry) for entry, path in listing if path != ".gitignore"] == [
        (path, f"100644 {sha} 0") for path in ("fd", "fd.txt", "fd0", "fdA", "fd_x")]
    # (and nothing the header counts that is not there)


@pytest.mark.parametrize("signature", [b"ABCD", b"Zzzz"])
def test_an_optional_extension_is_skipped(ws: gitspace.Workspace, signature: bytes) -> None:
    """An extension named from an uppercase letter (A to Z) is a cache a reader may ignore."""
    plain = (ws.root / ".git" / "index").read_bytes()
    data = plain[:-20] + signature + b"\0\0\0\1x"
    data += hashlib.sha1(data).digest()
    assert gitindex.parse(data).raw == gitindex.parse(plain).raw


def test_an_empty_index_is_read_back(ws: gitspace.Workspace) -> None:
    index_path = ws.root / ".git" / "index"
    index = gitindex.load(index_path)
    index.remove(".gitignore")
    gitindex.store(index_path, index)
    assert len(index_path.read_bytes()) == 32  # a header and a checksum
    assert gitindex.parse(index_path.read_bytes()).paths == []
    assert git(ws.root, "ls-files") == ""


def test_an_unchanged_index_is_parsed_once(ws: gitspace.Workspace) -> None:
    """An op in a long-running process reuses the index it parsed while the file is the same."""
    index_path = ws.root / ".git" / "index"
    first = gitindex.load(index_path, copy=False)
    assert gitindex.load(index_path, copy=False) is first
    git(ws.root, "update-index", "--index-info",
        input=f"100644 {ws.repo.write_blob(b'x')}\tx.txt\n".encode())
    assert gitindex.load(index_path, copy=False) is not first


def test_a_shared_index_in_use_is_never_pruned_however_old(ws: gitspace.Workspace) -> None:
    """Folding the same entries again names the shared file already there, which may be older
    than the hour after which unused ones go: it stays, the index links to it."""
    index_path = ws.root / ".git" / "index"
    gitindex.store(index_path, gitindex.load(index_path), split=True)  # writes a shared file
    shared = list(index_path.parent.glob("sharedindex.*"))
    assert len(shared) == 1
    gitindex.store(index_path, gitindex.load(index_path), split=False)  # plain again
    hours_ago = shared[0].stat().st_mtime - 7200
    os.utime(shared[0], (hours_ago, hours_ago))
    gitindex.store(index_path, gitindex.load(index_path), split=True)  # the same entries
    assert shared[0].exists()
    assert git(ws.root, "ls-files") == ".gitignore\n"


def test_conflict_stages_in_a_split_index_are_read_and_written_back(
        ws: gitspace.Workspace) -> None:
    """Stages in the shared file (positions of a path with several entries) and stages git
    added after it (one entry per stage, told apart by their flags) both survive our write."""
    sha = ws.repo.write_blob(b"bulk\n")  # (git keeps the shared file while under 20% changed)
    index_path = _index_of(ws, _stages(ws, "shared-conflict.txt") + "".join(
        f"100644 {sha}\tbulk/{n}.txt\n" for n in range(30)))
    git(ws.root, "update-index", "--split-index")  # the shared file now holds those stages
    _index_of(ws, _stages(ws, "added-conflict.txt"))  # written by git after the shared file
    listing = git(ws.root, "ls-files", "-s")
    assert gitindex.load(index_path).shared is not None  # read by us, its shared file too
    index = gitindex.parse(index_path.read_bytes(), index_path.parent)
    assert index.extra_stages == {b"shared-conflict.txt": 2, b"added-conflict.txt": 2}
    assert b"added-conflict.txt" not in index.shared.positions
    other = ws.repo.write_blob(b"other\n")
    index.set("other.txt", other, 0o100644, None)
    gitindex.store(index_path, index, split=True)
    expected = [*listing.splitlines(), f"100644 {other} 0\tother.txt"]
    assert git(ws.root, "ls-files", "-s").splitlines() == sorted(
        expected, key=lambda line: (line.split("\t")[1], line.split()[2]))


def test_a_changed_entry_of_a_split_index_is_written_as_a_replacement(
        ws: gitspace.Workspace) -> None:
    """Its shared entry is replaced in place (git takes the name from it): the split file holds
    one nameless entry, not a deletion and the whole entry again."""
    index_path = ws.root / ".git" / "index"
    gitindex.store(index_path, gitindex.load(index_path), split=True)
    index = gitindex.load(index_path)
    index.set(".gitignore", ws.repo.write_blob(b"changed\n"), 0o100644, None)
    gitindex.store(index_path, index, split=True)
    _, entries, _ = gitindex._entries(index_path.read_bytes())
    assert [path for path, _ in entries] == [b""]
    assert git(ws.root, "ls-files", "-s", ".gitignore").split()[1] == ws.repo.write_blob(
        b"changed\n")


def test_skip_worktree_entries_through_a_split_index_keep_their_flags(
        ws: gitspace.Workspace) -> None:
    """Extended flags (a version 3 index) in the shared file we fold and in an entry git
    replaces after it: both read and written back as git wrote them."""
    sha = ws.repo.write_blob(b"bulk\n")
    index_path = _index_of(ws, "".join(f"100644 {sha}\tbulk/{n}.txt\n" for n in range(30)))
    git(ws.root, "update-index", "--skip-worktree", "bulk/0.txt")  # git makes it version 3
    gitindex.store(index_path, gitindex.load(index_path), split=True)  # we fold it
    git(ws.root, "update-index", "--skip-worktree", "bulk/1.txt")  # git replaces that entry
    index = gitindex.load(index_path)
    assert index.shared is not None
    index.set("other.txt", sha, 0o100644, None)
    gitindex.store(index_path, index, split=True)
    flags = {line[2:]: line[0] for line in git(ws.root, "ls-files", "-v").splitlines()}
    assert [path for path, flag in sorted(flags.items()) if flag == "S"] == [
        "bulk/0.txt", "bulk/1.txt"]
    assert len(flags) == 32 and set(flags.values()) == {"S", "H"}
