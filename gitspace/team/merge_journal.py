"""A merge into the user's own checkout, journaled, so that a crash at any instant is undone.

Invariants:
- Before the branch's ref lock is taken, ``merge.json`` in the checkout's own gitspace state
  folder names the ref, the commit it is at, the merge commit, the paths the merge changes and
  whether it writes them into the checkout. Right before git writes them, a copy of the user's
  index is kept beside it (``merge-index``). Both go once the merge is done or undone.
- Every merge (and attach) in that checkout first takes the checkout's gitspace lock and finishes
  what a dead one left (``recover``): it breaks the ref and index locks the dead merge or its git
  child took (only those taken after its journal), then
  * if the branch moved to the merge, the merge had finished: there is nothing to undo;
  * if it is still where it was, the checkout is put back (``put_back``): the saved index when
    no other entry of it changed since (byte for byte as before), else those paths' entries; and
    each path the merge wrote, but only where the file still holds what the merge wrote (git
    compares, filters included): an edit the user made since is left alone;
  * if the branch is elsewhere, someone else moved it: nothing is touched.
- Files are put back by git (``checkout-index``, with the user's filters) or, for files the
  merge added, removed through ``storage.files`` (never through a link). Nothing else of the
  checkout is read or written.
"""

from __future__ import annotations

import json
import os
import stat as statmod
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.writer import Writer, break_stale_locks, object_id, ref_name
from ..storage import bounds, lockfile, statefiles
from ..storage.files import Files, is_plain
from ..storage.gitrepo import GitRepo
from ..storage.objects import Entry
from ..storage.refs import ZERO

JOURNAL = "merge.json"
INDEX_COPY = "merge-index"


class MergeJournal:
    """The journal of the one merge that may be under way in one checkout."""

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo
        self.folder = statefiles.folder(repo.gitdir, "gitspace")  # (never a link)
        self.path = self.folder / JOURNAL
        self.index_copy = self.folder / INDEX_COPY
        self.recovered = False  # a dead merge's leftovers were undone when the lock was taken

    def begin(self, ref: str, old: str, new: str, files: list[str], checkout: bool) -> None:
        statefiles.write(self.repo.gitdir, f"gitspace/{JOURNAL}", json.dumps(
            {"ref": ref, "old": old, "new": new, "files": files, "checkout": checkout}).encode())

    def save_index(self) -> None:
        """Keep a copy of the checkout's index (right before git rewrites it)."""
        index = self.repo.gitdir / "index"
        statefiles.write(self.repo.gitdir, f"gitspace/{INDEX_COPY}",
                         index.read_bytes() if index.exists() else b"")

    def end(self) -> None:
        self.index_copy.unlink(missing_ok=True)
        self.path.unlink(missing_ok=True)

    def put_back(self, old: str, new: str, files: list[str]) -> None:
        """Undo the merge's writes to the checkout (see the module docstring), then end."""
        if self.index_copy.exists():  # git may have written: before the copy, it had not
            put_back(self.repo, old, new, files, self.index_copy,
                     self.path.stat().st_mtime_ns)
        self.end()

    def recover(self) -> bool:
        """Finish what a merge that died left behind (the lock is held). True if there was one."""
        try:
            raw = statefiles.read(self.repo.gitdir, f"gitspace/{JOURNAL}")
            if raw is None:
                return False
            record = bounds.load_state(raw, "the merge journal")
            since = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            return False
        except bounds.OutOfBounds:  # whole, but none a merge writes: refused below, and kept
            record, since = None, 0
        except ValueError:  # written by rename: a torn journal never took effect
            self.end()
            return False
        try:
            ref, old, new, files = _checked(record)
        except ValueError:  # none a merge writes: nothing in it is acted on, and it stays
            raise statefiles.StateRefused(
                f"{self.path} is not a merge journal gitspace wrote, so no merge was undone "
                "from it.", hint=f"Move {self.path} away, then run the command again; check with "
                "'git status' that your checkout holds what you expect.") from None
        break_stale_locks([self.repo.commondir / f"{ref}.lock", self.repo.gitdir / "index.lock"],
                          since, self.repo)
        if self.repo.read_ref(ref) == old and record["checkout"] is True:
            self.put_back(old, new, files)
        self.end()
        return True


def _checked(record: object) -> tuple[str, str, str, list[str]]:
    """The ref, old and new commits and paths of a journal as ``begin`` writes it, or ValueError."""
    if not isinstance(record, dict) or not isinstance(record.get("files"), list):
        raise ValueError("not a merge journal")
    old, new = object_id(record.get("old")), object_id(record.get("new"))
    files = record["files"]
    if old is None or new is None or not all(isinstance(f, str) and is_plain(f) for f in files):
        raise ValueError("not a merge journal")
    return ref_name(record.get("ref")), old, new, files


@contextmanager
def locked(repo: GitRepo) -> Iterator[MergeJournal]:
    """Hold the checkout's gitspace lock, with any merge a crash interrupted undone first."""
    journal = MergeJournal(repo)
    with Writer(repo).locked():  # (the writer's lock, and any change of its a crash cut finished)
        journal.recovered = journal.recover()
        yield journal


def put_back(repo: GitRepo, old: str, new: str, files: list[str], index_copy: Path,
             since_ns: int) -> None:
    """Return ``files`` (clean at ``old`` before the merge to ``new``, begun at ``since_ns``) and
    their index entries to ``old``, keeping any change the user made to them since."""
    old_tree, new_tree = repo.commit(old).tree, repo.commit(new).tree
    before = {p: repo.entry_at(old_tree, p) for p in files}
    after = {p: repo.entry_at(new_tree, p) for p in files}
    written = _holding_the_merge(repo, before, after, since_ns)
    index = repo.gitdir / "index"
    # (An index is at most 4 GiB: git's own offsets in it are 32 bits.)
    saved = statefiles.read(repo.gitdir, f"gitspace/{INDEX_COPY}", limit=1 << 32) or b""
    if saved and _same_but(repo, index, index_copy, set(files)):
        lockfile.replace(index, saved)
    else:
        lines = b"".join(
            (f"{e.mode:o} {e.sha}\t" if e is not None else f"0 {ZERO}\t").encode()
            + os.fsencode(p) + b"\0" for p, e in before.items())
        repo.git("update-index", "-z", "--index-info", input=lines)
    back = b"".join(os.fsencode(p) + b"\0" for p in written if before[p] is not None)
    if back:
        repo.git("checkout-index", "-f", "-z", "--stdin", input=back)
    tree = Files(repo.root)
    for p in written:
        if before[p] is None:
            tree.put(p, None)


def _holding_the_merge(repo: GitRepo, before: dict[str, Entry | None],
                       after: dict[str, Entry | None], since_ns: int) -> list[str]:
    """The paths whose file is what the merge did there: its content where it wrote one (as git
    compares it, filters included), or the start of it (git writes a file in place: a killed git
    leaves it half written, never older than the merge), absent where it deleted or was about to
    rewrite one."""
    tree = Files(repo.root)
    written = [p for p, e in after.items() if e is None and tree.stat(p) is None]
    present = [p for p, e in after.items() if e is not None]
    if not present:
        return written
    with tempfile.TemporaryDirectory(prefix="gitspace-merge-", dir=repo.gitdir) as tmp:
        # An index holding just those paths as merged: refreshing it makes git compare their
        # content (and only theirs), so what is left differing is not the merge's.
        merged = Path(tmp, "index")
        repo.git("update-index", "-z", "--index-info", index=merged, input=b"".join(
            f"{e.mode:o} {e.sha}\t".encode() + os.fsencode(p) + b"\0"
            for p, e in after.items() if e is not None))
        repo.git("update-index", "-q", "--refresh", index=merged, check=False)
        out = repo.git("diff-files", "--name-only", "-z", index=merged)
    differ = {os.fsdecode(p) for p in out.split(b"\0") if p}
    for p in present:
        if p not in differ:
            written.append(p)
            continue
        st = tree.stat(p)
        if st is None:
            if before[p] is not None:
                written.append(p)  # removed to be rewritten: it was clean, so it comes back
        elif statmod.S_ISREG(st.st_mode) and st.st_mtime_ns >= since_ns:
            entry = after[p]
            assert entry is not None
            state = tree.read(p)
            if state is not None and repo.read_blob(entry.sha).startswith(state[0]):
                written.append(p)  # half written by the git the crash killed
    return written


def _same_but(repo: GitRepo, index: Path, other: Path, paths: set[str]) -> bool:
    """Do the two index files hold the same entries, ``paths`` aside?"""
    def entries(path: Path) -> list[bytes]:
        out = repo.git("ls-files", "-s", "-z", index=path)
        return [e for e in out.split(b"\0") if e and os.fsdecode(e.split(b"\t", 1)[1]) not in paths]

    return entries(index) == entries(other)
