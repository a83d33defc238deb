"""Settling racily clean index entries never hides a change from git, and makes status cheap.

Real workspaces, real files, and git's own ``status`` as the judge. The index is made racy the way
an op leaves it (its mtime in the second of the entries), by setting the index file's mtime; the
tests then wait for the clock to leave that second, as ``settle`` does.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import call_ok, git

import gitspace
from gitspace.storage import gitindex, racyindex
from gitspace.storage.loose import hash_object

NS = 1_000_000_000


def status(root: Path) -> list[str]:
    return [line for line in git(root, "--no-optional-locks", "status", "--porcelain",
                                 "--untracked-files=all").splitlines() if line]


def make_racy(root: Path, oldest: str | None = None) -> Path:
    """Give the index the mtime of its oldest entry (or of entry ``oldest``): every entry of
    that second or later is racy."""
    index = root / ".git" / "index"
    loaded = gitindex.load(index)
    stamps = {p: gitindex.stat_data(loaded.raw[p])[2] * NS + gitindex.stat_data(loaded.raw[p])[3]
              for p in loaded.paths}
    when = min(stamps.values()) if oldest is None else stamps[oldest.encode()]
    os.utime(index, ns=(when, when))
    return index


def past_the_second(root: Path) -> None:
    """Sleep until the file clock has left the second of every file in the work tree."""
    newest = max(max(p.lstat().st_mtime_ns, p.lstat().st_ctime_ns)
                 for p in root.rglob("*") if ".git" not in p.parts)
    while (time.time_ns() - 60_000_000) // NS <= newest // NS:
        time.sleep(0.05)


@pytest.fixture
def written(ws: gitspace.Workspace) -> gitspace.Workspace:
    """A workspace whose last op wrote 300 files (a racy index once ``make_racy`` ran)."""
    for i in range(3):
        call_ok(ws, "create", {"path": f"d{i}/a.txt", "file_text": f"file {i}\n" * 50})
    (ws.root / "bulk").mkdir()
    for i in range(300):
        (ws.root / "bulk" / f"{i:03d}.txt").write_text(f"bulk {i}\n")
    assert ws.snapshot().ok  # one op for the outside change, through gitspace's index writer
    return ws


def changed_unseen(root: Path) -> Path:
    """d1/a.txt rewritten in place, same size, with its index entry taking the new stat data but
    the old blob (what a change within the entry's own tick looks like), the index made racy."""
    target = root / "d1" / "a.txt"
    old = target.read_bytes()
    target.write_bytes(old.replace(b"file 1", b"file I"))
    loaded = gitindex.load(root / ".git" / "index")
    loaded.set("d1/a.txt", hash_object("blob", old), 0o100644, target.lstat())
    gitindex.store(root / ".git" / "index", loaded)
    make_racy(root)
    return target


def test_racy_entries_are_verified_and_status_stays_clean(written: gitspace.Workspace) -> None:
    root = written.root
    index = make_racy(root)
    found = racyindex.racy(index)
    assert found is not None and found.entries >= 300 and found.plain and found.worth_settling()
    past_the_second(root)
    assert found.settled_by_now()
    done = racyindex.settle(index, root)
    assert done == racyindex.Settled(verified=found.entries, smudged=0)
    after = racyindex.racy(index)
    assert after is not None and after.entries == 0
    assert status(root) == []
    assert git(root, "diff-files", "--name-only") == ""  # git trusts the stat data now


def test_a_change_the_stat_data_cannot_show_is_smudged_never_hidden(
        written: gitspace.Workspace) -> None:
    """The race git's rule exists for: a file rewritten, same size, within the tick its entry
    was recorded in, so the entry's stat data matches the new content exactly."""
    root = written.root
    target = root / "d1" / "a.txt"
    old = target.read_bytes()
    target.write_bytes(old.replace(b"file 1", b"FILE 1"))  # same size, in place
    loaded = gitindex.load(root / ".git" / "index")
    loaded.set("d1/a.txt", hash_object("blob", old), 0o100644, target.lstat())
    gitindex.store(root / ".git" / "index", loaded)
    index = make_racy(root)
    assert " M d1/a.txt" in status(root)  # racy: git compares the content
    past_the_second(root)
    done = racyindex.settle(index, root)
    assert done is not None and done.smudged == 1
    assert status(root) == [" M d1/a.txt"]  # not racy any more, and still seen
    assert gitindex.stat_data(gitindex.load(index).raw[b"d1/a.txt"])[9] == 0


def test_nothing_is_settled_within_the_entries_second(written: gitspace.Workspace) -> None:
    root = written.root
    target = root / "d0" / "a.txt"
    future = time.time_ns() + 30 * NS  # (a file clock ahead of ours: it is "now" for that file)
    os.utime(target, ns=(future, future))
    loaded = gitindex.load(root / ".git" / "index")
    loaded.set("d0/a.txt", hash_object("blob", target.read_bytes()), 0o100644, target.lstat())
    gitindex.store(root / ".git" / "index", loaded)
    index = root / ".git" / "index"
    os.utime(index, ns=(future, future))
    found = racyindex.racy(index)
    assert found is not None and found.entries == 1 and not found.settled_by_now()
    before = index.read_bytes()
    assert racyindex.settle(index, root) is None
    assert index.read_bytes() == before


def test_an_index_with_a_racy_entry_only_git_writes_is_left_alone(
        written: gitspace.Workspace) -> None:
    root = written.root
    git(root, "update-index", "--skip-worktree", "d0/a.txt")  # an extended-flag entry
    index = make_racy(root, oldest="d0/a.txt")
    found = racyindex.racy(index)
    assert found is not None and not found.plain and not found.worth_settling()
    past_the_second(root)
    before = index.read_bytes()
    assert racyindex.settle(index, root) is None
    assert index.read_bytes() == before


def test_a_folder_turned_into_a_link_is_not_read_through(written: gitspace.Workspace,
                                                          tmp_path: Path) -> None:
    root = written.root
    elsewhere = tmp_path / "elsewhere"
    os.rename(root / "d2", elsewhere)
    os.symlink(elsewhere, root / "d2")  # the same file, reached through a link
    index = make_racy(root)
    past_the_second(root)
    done = racyindex.settle(index, root)
    assert done is not None and done.smudged >= 1
    assert " D d2/a.txt" in status(root) and "?? d2" in status(root)


def test_the_next_op_keeps_a_change_made_in_the_entrys_own_second_visible(
        written: gitspace.Workspace) -> None:
    """git's writer smudges what it would otherwise trust by mistake; gitspace's does too. The
    change: a file rewritten in place, same size, within the tick its entry was recorded in (so
    the recorded stat data matches it). The next op, a second later, rewrites the index; copied
    byte for byte the entry would leave the change out of ``git status`` for good."""
    root = written.root
    target = changed_unseen(root)
    assert status(root) == [" M d1/a.txt"]
    past_the_second(root)
    call_ok(written, "create", {"path": "other.txt", "file_text": "another op\n"})
    assert status(root) == [" M d1/a.txt"]  # still seen (smudged), not hidden
    assert written.snapshot().ok and status(root) == []  # and gitspace commits it as usual
    assert git(root, "show", "HEAD:d1/a.txt").encode() == target.read_bytes()


def test_a_smudged_entry_keeps_a_split_index_split(written: gitspace.Workspace,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The index stored again with the smudged entry keeps the format the op chose."""
    monkeypatch.setattr(gitindex, "SPLIT_OPT_IN_AT", 40)  # (written holds 300 entries)
    root = written.root
    git(root, "config", "core.splitIndex", "true")
    changed_unseen(root)
    past_the_second(root)
    with gitspace.open(root, agent="tester") as ws:  # (reads core.splitIndex afresh)
        call_ok(ws, "create", {"path": "other.txt", "file_text": "another op\n"})
    assert status(root) == [" M d1/a.txt"]  # smudged, so still seen
    index_path = root / ".git" / "index"
    assert gitindex.parse(index_path.read_bytes(), index_path.parent).shared is not None


def _identity(index: Path) -> tuple[int, ...]:
    st = index.stat()
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def test_an_op_carries_the_racy_entries_over_without_reading_the_index(
        written: gitspace.Workspace) -> None:
    """The writer works out the racy entries of the index it stores from the paths it changed and
    the ones racy before (``carry``), not from the whole index: after every op, the answer a
    fresh read of the file gives, ops within one second and across seconds alike."""
    index = written.repo.gitdir / "index"
    assert racyindex.racy(index) is not None  # a read: known from here on
    for i in range(8):
        call_ok(written, "create", {"path": f"c/{i}.txt", "file_text": f"op {i}\n"})
        if i in (2, 5):
            past_the_second(written.root)
        carried = racyindex.known(index, _identity(index))
        assert carried is not None, f"op {i} did not carry its racy entries over"
        racyindex._found.clear()
        assert racyindex.racy(index) == carried
    assert carried.entries >= 1 and b"c/7.txt" in carried.paths


def test_a_carried_racy_entry_changed_unseen_is_still_smudged(
        written: gitspace.Workspace) -> None:
    """The next op's smudging looks only at the entries racy before and the ones it wrote
    (``among``): a file an op wrote, rewritten in place in the same second and size (stat data
    that cannot show the change), is among them, and stays visible to git."""
    root, index = written.root, written.repo.gitdir / "index"
    racyindex.racy(index)
    for attempt in range(20):
        rel = f"same-second-{attempt}.txt"
        call_ok(written, "create", {"path": rel, "file_text": "first\n"})
        entry = gitindex.stat_data(gitindex.load(index).raw[rel.encode()])
        (root / rel).write_text("FIRST\n")  # in place: same inode, same size
        st = (root / rel).lstat()
        if (st.st_mtime_ns // NS, st.st_ctime_ns // NS) == (entry[2], entry[0]):
            break  # the stat data git compares cannot show the change
    else:
        pytest.fail("no rewrite landed in its entry's second")
    assert racyindex.known(index, _identity(index)) is not None  # the next op narrows its look
    past_the_second(root)
    call_ok(written, "create", {"path": "next.txt", "file_text": "next op\n"})
    assert f" M {rel}" in status(root)
