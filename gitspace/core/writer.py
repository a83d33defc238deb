"""The one writer: every change to a checkout's refs, HEAD, index or work-tree files is one
``Change`` value, applied whole by ``Writer.apply``, or not at all.

Invariants:
- One writer at a time per checkout: ``Writer.locked`` holds the lock of its gitspace state
  folder, and first finishes any change a crash interrupted.
- Order: objects (written by the caller: harmless if orphaned) → journal → refs (one: by
  compare-and-swap under its lock file; several: one git ref transaction, locked and verified
  first, moved together once the files and index are written) → HEAD → work-tree files (each by
  tmp-file-and-rename through ``storage.files``: deletions first, never through a link) → index
  → journal removed.
- A failure before a ref or HEAD moves changes nothing; one after it is rolled back (files and
  index entries as they were, refs and HEAD moved back) before the error surfaces. When the
  rollback fails too, the journal stays and the next ``locked`` finishes the change instead.
- A crash at any point leaves the journal, and ``recover`` finishes the change from it (roll
  forward): a change whose ref moved is never lost, and none stays half applied. Each ref moves
  on only from where the change found it: one moved by someone else meanwhile is left, with the
  files.
- The index holds exactly the tree's entries for the paths a change touched: never a file and a
  folder of one name (``fd`` and ``fd/x``). It is the checkout's own ``.git/index``, or none
  (``Change.index`` False: a change to work-tree files alone).
- A private repository (``GitRepo.private``: replay's scratch) keeps no journal.

Nothing else above ``storage/`` moves a ref, HEAD or the index (``tests/test_architecture.py`` holds
the rule and its listed exceptions).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from .. import faults
from ..errors import (
    FileRefused,
    GitspaceError,
    LockTimeout,
    ToolFailed,
    WriteFailed,
    system_hint,
)
from ..storage import bounds, gitnames, lockfile, statefiles
from ..storage.files import Files, InTheWay, State, is_plain, order
from ..storage.gitrepo import GitRepo
from ..storage.objects import Signature
from ..storage.records import field, record
from .paths import check_tree_paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..storage import gitindex

COMMITTER = Signature("gitspace", "gitspace@localhost")
JOURNAL = "gitspace/journal.json"  # below the worktree's git dir
INDEX_TRIES = 5  # loads of an index another git process keeps replacing under us


@record(frozen=True)
class RefMove:
    """Move ``ref`` from ``old`` to ``new`` (old None: it must not exist; new None: delete it)."""

    ref: str
    old: str | None
    new: str | None


@record(frozen=True)
class Change:
    """One change to a checkout, whole or not at all. Any part may be empty:
    a ref-only move (a branch or tag made, a ref outside ``refs/heads``), files only (no index,
    no HEAD), or everything at once (an op: its branch, files and index)."""

    why: str  # the reflog message: "gitspace: create"
    who: Signature  # the reflog lines' name
    refs: Sequence[RefMove] = ()
    head: str | None = None  # point HEAD at this branch (a switch)
    # The commit whose tree the paths below follow (their files and index entries). None: the
    # files are written as given and nothing is journaled for them (a put-back).
    at: str | None = None
    files: Mapping[str, State] = field(default_factory=dict)  # what the work tree is to hold
    # What each path the change syncs holds on disk now (what a rollback puts back): every path
    # here and in ``files`` gets its index entry from ``at``'s tree.
    before: Mapping[str, State] = field(default_factory=dict)
    known: Mapping[str, os.stat_result] = field(default_factory=dict)  # stats taken before hashing
    index: bool = True  # update the index entries of the paths (False: the work tree only)
    lenient: bool = False  # a path whose way is blocked is skipped (put-backs), not refused
    # A failure after the refs moved is finished by the next ``locked``, not rolled back (a
    # repository's first commit: there is nothing to roll back to).
    finish_if_failed: bool = False

    @property
    def paths(self) -> list[str]:
        return sorted(set(self.before) | set(self.files))


@record(frozen=True)
class IndexUndo:
    """What ``sync_index`` replaced, to put back: the old raw entries of its paths, or None when
    the index is in a format only git writes (then git re-syncs them instead)."""

    entries: dict[bytes, tuple[bytes, int] | None] | None


@record()
class _Moved:
    """What a change has moved so far, so a rollback moves exactly that back."""

    refs: list[RefMove] = field(default_factory=list)
    head: tuple[str, str | None, str | None] | None = None  # (old branch, old tip, new tip)


class Writer:
    """The writer of one checkout: its lock, its journal, and ``apply``."""

    def __init__(self, repo: GitRepo, *, durable: bool = False, files: Files | None = None) -> None:
        self.repo = repo
        self.root = repo.root
        # durable: fsync every work-tree file a change writes (survives a power cut; slower).
        # ``files``: a work tree that fills itself (a delegated child's, team/agent_worktrees.py).
        self.files = files or Files(repo.root, durable=durable, private=repo.private)
        self.state_dir = statefiles.folder(repo.gitdir, "gitspace")  # (never a link)
        self.journal = self.repo.gitdir / JOURNAL
        self._split_config: bool | None | str = "unread"  # core.splitIndex, read when it matters
        self.notes: list[str] = []  # said once to the user: collected by the next Result

    # -- locking -----------------------------------------------------------------------------

    @contextmanager
    def locked(self, timeout: float = 30.0, busy: LockTimeout | None = None) -> Iterator[None]:
        """Hold this checkout's lock, with any change a crash interrupted finished first;
        ``busy`` is the error when another process holds it past ``timeout``."""
        with hold_lock(self.repo.gitdir, timeout, busy):
            self.recover_locked()
            yield

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    # -- the one write -----------------------------------------------------------------------

    def apply(self, change: Change) -> list[str]:
        """Apply ``change`` (hold ``locked``): the order, rollback and journal of the module
        docstring. Returns the paths written (with ``lenient``, those not in the way)."""
        paths = change.paths
        if change.at is not None:  # files from a tree: refused before the journal, nothing moved
            check_tree_paths(change.files, change.why)  # (a put-back restores what the disk held)
        journaled = change.at is not None or bool(change.refs) or change.head is not None
        if journaled:
            self.journal_write(_record(change, paths))
        # A path counts as written once it changed: put_file changes nothing when it fails
        # (but for a failed flush after its rename, which it reports), and "restoring" a path
        # it refused (a folder in the way) would destroy what is there.
        written: list[str] = []
        index: IndexUndo | None = None
        moved = _Moved()
        try:
            with self._moving(change, moved):
                stats = self.put_files(change.files, lenient=change.lenient, done=written)
                if change.index and change.at is not None and paths:
                    index = self.sync_index(paths, change.at, {**change.known, **stats})
            if journaled:
                self.journal_remove()
        except BaseException as failure:
            if not journaled or change.finish_if_failed and moved.refs:
                raise  # a put-back has nothing behind it; a first commit is finished next time
            # The index goes back to what the checkout was at: the first ref's old commit, or
            # the tip HEAD named before a switch.
            back_to = (moved.head[1] if moved.head else None) or (
                change.refs[0].old if change.refs else None) or change.at or ""
            self.roll_back(failure, written, change.before, paths, index,
                           lambda: self._move_back(change, moved), back_to)
            raise
        return written

    @contextmanager
    def _moving(self, change: Change, moved: _Moved) -> Iterator[None]:
        """Move the refs (one by compare-and-swap now; several in one git ref transaction that
        commits when the block ends) and HEAD, recording in ``moved`` what moved."""
        refs = list(change.refs)
        if len(refs) > 1:
            with self.repo.ref_transaction([(m.ref, m.old, m.new) for m in refs], change.who,
                                           change.why):
                self._move_head(change, moved)
                yield
            moved.refs = refs
            return
        for m in refs:
            self.repo.cas_ref(m.ref, m.old, m.new, change.who, change.why)
            moved.refs.append(m)
        self._move_head(change, moved)
        yield

    def _move_head(self, change: Change, moved: _Moved) -> None:
        if change.head is None:
            return
        current = self.repo.head_branch()
        if current is None:
            raise GitspaceError("HEAD is detached, so gitspace will not move it.",
                                hint="Run 'git switch BRANCH' first.")
        old = self.repo.read_ref(f"refs/heads/{current}")
        new = self.repo.read_ref(f"refs/heads/{change.head}")
        self.repo.set_head(change.head, change.who, old, new)
        moved.head = (current, old, new)

    def _move_back(self, change: Change, moved: _Moved) -> None:
        if moved.head is not None:
            branch, old, new = moved.head
            self.repo.set_head(branch, change.who, new, old)
        back = [RefMove(m.ref, m.new, m.old) for m in reversed(moved.refs)]
        why = f"{change.why}: rolled back"
        if len(back) == 1:
            self.repo.cas_ref(back[0].ref, back[0].old, back[0].new, change.who, why)
        elif back:
            with self.repo.ref_transaction([(m.ref, m.old, m.new) for m in back], change.who, why):
                pass

    def roll_back(self, failure: BaseException, written: list[str],
                  before: Mapping[str, State], paths: list[str], index: IndexUndo | None,
                  move_back: Callable[[], None], commit: str) -> None:
        """Undo a change that failed past its ref (or HEAD) move: put ``written`` back to their
        ``before`` states, the index entries of ``paths`` back (``index``: what ``sync_index``
        returned, None when it did not store), then ``move_back()``, then drop the journal. If
        a step fails, the journal stays and the next open finishes the change instead
        (WriteFailed says so). ``commit`` is what the index entries came from."""
        try:
            self.put_files({rel: before.get(rel) for rel in written}, lenient=True)
            if index is not None:
                self._restore_index(index, paths, commit)
            move_back()
        except Exception as e:
            raise WriteFailed(
                f"{_sentence(failure)} Rolling it back failed too ({_sentence(e)}), so the next "
                "gitspace command in this workspace will finish it from its journal.",
                hint=_hint(failure)) from failure
        self.cancel_journal()

    # -- files -------------------------------------------------------------------------------

    def put_files(self, changes: Mapping[str, State], *, lenient: bool = False,
                  done: list[str] | None = None) -> dict[str, os.stat_result]:
        """Write ``changes`` to the work tree in ``files.order`` (deletions first), one
        ``put_file`` each; the stats of the files written. ``lenient`` (recovery, rollback)
        leaves a path whose way is blocked for the next snapshot instead of raising. ``done``
        gets each path written, and the path whose write failed after it changed it."""
        stats: dict[str, os.stat_result] = {}
        for rel in order(changes):
            try:
                st = self.put_file(rel, changes[rel], done)
            except InTheWay:
                if not lenient:
                    raise
                continue
            if st is not None:
                stats[rel] = st
            if done is not None:
                done.append(rel)
        return stats

    def put_file(self, rel: str, state: State, changed: list[str] | None = None
                 ) -> os.stat_result | None:
        """Make the work-tree path hold ``state`` (None: absent), atomically, never through a
        link (``storage.files``); the stat of the file written. A failure after the path
        changed (a durable folder's flush) adds it to ``changed`` first."""
        return self.files.put(rel, state, changed=changed)

    # -- the index ---------------------------------------------------------------------------

    def sync_index(self, paths: Iterable[str], commit: str,
                   known: dict[str, os.stat_result] | None = None) -> IndexUndo:
        """Make the index entries of ``paths`` match ``commit``'s tree and the work tree.

        ``known`` holds stats taken before content was hashed; other paths are stat'ed now (we
        just wrote them). Returns what ``_restore_index`` needs to put the entries back.
        """
        from ..storage import gitindex  # (see _change_index)

        known = known or {}
        paths = list(paths)
        tree = self.repo.commit(commit).tree
        saved: list[dict[bytes, tuple[bytes, int] | None]] = []

        def update(index: gitindex.Index) -> None:
            saved[:] = [index.entries_of(paths)]
            self._update_entries(index, paths, tree, known)

        try:
            self._change_index(update, "updated it")
        except gitindex.IndexUnsupported:
            self._sync_index_with_git(paths, tree)
            return IndexUndo(None)
        return IndexUndo(saved[0])

    def settle_index(self) -> None:
        """Rewrite the stat data of the index's racy entries (``racyindex.settle``: what
        ``git status`` would store); no entry changes."""
        from ..storage import racyindex

        racyindex.settle(self.repo.gitdir / "index", self.root, private=self.repo.private)

    def _change_index(self, change: Callable[[gitindex.Index], None], doing: str) -> None:
        """Load the index, ``change`` it, store it; once more when another git process replaced
        it meanwhile (their change is kept, ours redone on it)."""
        # Imported here: a change of refs alone (recording in place: a harness's hook on every
        # tool call) never loads an index, nor pays for these modules (hashlib, struct...).
        from ..storage import gitindex, racyindex

        index_path = self.repo.gitdir / "index"
        for _ in range(INDEX_TRIES):
            # No defensive copy of a 10,000-entry index per op: on any failure we forget it.
            index = gitindex.load(index_path, copy=False)
            before = racyindex.known(index_path, index.origin)
            try:
                change(index)
                was_split = index.shared is not None
                split = self._split_index(index)
                since = index.origin[2] // racyindex.NS if index.origin else None
                touched = set(index.changed)  # (a split index: a superset, which is as good)
                gitindex.store(index_path, index, split=split, private=self.repo.private)
                if since is not None:
                    among = None if before is None else before.paths | touched
                    touched |= self._smudge_unseen(index_path, index, since, split, among)
                racyindex.carry(index_path, index, before, touched)
                if split and not was_split:
                    self.notes.append(_split_note(len(index.paths)))
                return
            except BaseException as e:
                gitindex.forget(index_path)  # the cached index holds a change never stored
                if isinstance(e, gitindex.IndexLocked):
                    raise LockTimeout(
                        f"{index_path}.lock exists: another git process is updating the index.",
                        hint="If no git process is running, remove that file and try again.",
                    ) from None
                if not isinstance(e, gitindex.IndexChanged):
                    raise
        raise LockTimeout(f"{index_path} kept changing while gitspace {doing}.",
                          hint="Wait for the other git process to finish, then try again.")

    def _smudge_unseen(self, index_path: Path, index: gitindex.Index, since: int,
                       split: bool, among: frozenset[bytes] | None) -> set[bytes]:
        """git's racy-git rule for the index just stored: an entry it now trusts whose file
        changed unseen in the entry's own second is smudged (racyindex.unseen_changes), and the
        index stored again; the paths smudged. ``among``: the only entries that can be such
        (None: not known, every entry is looked at)."""
        from ..storage import gitindex, racyindex

        assert index.origin is not None
        unseen = racyindex.unseen_changes(self.root, index, since, index.origin[2] // racyindex.NS,
                                          among)
        if unseen:
            for path in unseen:
                index.raw[path] = gitindex.smudged(index.raw[path])
                index.changed.add(path)
            gitindex.store(index_path, index, split=split, private=self.repo.private)
        return set(unseen)

    def _restore_index(self, saved: IndexUndo, paths: list[str], commit: str) -> None:
        """Put back the index entries ``sync_index`` replaced, byte for byte; an index only git
        can write is re-synced to ``commit`` by git instead."""
        entries = saved.entries
        if entries is None:
            self._sync_index_with_git(paths, self.repo.commit(commit).tree)
            return
        self._change_index(lambda index: index.put_back(entries), "rolled it back")

    def _split_index(self, index: gitindex.Index) -> bool:
        """Write this index split? Only a large one (see gitindex), as core.splitIndex says."""
        from ..storage import gitindex

        entries = len(index.paths)
        if entries < gitindex.SPLIT_OPT_IN_AT:
            return False  # no config read: the common case costs no git process
        if self._split_config == "unread":
            value = self.repo.git("config", "--type=bool", "--get", "core.splitIndex",
                                  check=False).strip()
            self._split_config = {b"true": True, b"false": False}.get(value)
        if self._split_config is None:
            return entries >= gitindex.SPLIT_AT
        return bool(self._split_config)

    def _update_entries(self, index: gitindex.Index, paths: Iterable[str], tree: str,
                        known: dict[str, os.stat_result]) -> None:
        for rel in paths:
            entry = self.repo.entry_at(tree, rel)
            if entry is None or entry.is_tree:
                index.remove(rel)
            else:
                st: os.stat_result | None = known.get(rel)
                if st is None:
                    st = self.files.stat(rel)
                # A file here means no folder here and no file above: the index must never hold
                # both fd and fd/x (git write-tree fails, git status stays dirty for good).
                index.remove_conflicts(rel)
                index.set(rel, entry.sha, entry.mode, st)

    def _sync_index_with_git(self, paths: list[str], tree: str) -> None:
        lines = []
        for rel in paths:
            entry = self.repo.entry_at(tree, rel)
            if entry is None or entry.is_tree:
                lines.append(f"0 {'0' * 40}\t{rel}")
            else:
                lines.append(f"{entry.mode:o} {entry.sha}\t{rel}")
        self.repo.git("update-index", "--replace", "-z", "--index-info",
                      input=("\0".join(lines) + "\0").encode("utf-8", "surrogateescape"))
        self.repo.git("update-index", "-q", "--refresh", check=False)

    # -- journal and recovery ----------------------------------------------------------------

    def journal_write(self, record: dict[str, object]) -> None:
        """Replace the journal by ``record`` (tmp file and rename: never torn, never half)."""
        if self.repo.private:
            return  # a private repository is thrown away whole: nothing to recover
        faults.hit("journal.write")
        # A new temporary file, never through a link (statefiles), renamed over the journal.
        statefiles.write(self.repo.gitdir, JOURNAL, json.dumps(record).encode())

    def journal_remove(self) -> None:
        if self.repo.private:
            return
        faults.hit("journal.remove")
        statefiles.remove(self.repo.gitdir, JOURNAL)  # (through a folder swapped for a link: no)

    def cancel_journal(self) -> None:
        """Drop the journal of a change that did not happen (or was rolled back). If it cannot be
        removed it is overwritten by one that finishes nothing: a stale journal must never
        re-apply a change that was reported failed."""
        try:
            self.journal_remove()
        except BaseException:
            try:
                self.journal_write({"moves": [], "paths": []})
            except BaseException:
                pass  # the first error says what happened; nothing more can be done here
            raise

    def recover(self) -> bool:
        if not self.journal.exists():
            return False
        with hold_lock(self.repo.gitdir):
            return self.recover_locked()

    def recover_locked(self) -> bool:
        """Finish a change a crashed process left half-applied. True if there was one."""
        try:
            raw = statefiles.read(self.repo.gitdir, JOURNAL)  # a fifo there is refused, unread
            if raw is None:
                return False
            record = bounds.load_state(raw, "the journal")
        except bounds.OutOfBounds:
            record = None  # whole, but nothing gitspace writes: refused below, and kept
        except ValueError:
            # The journal is written by rename, so a torn one means it never took effect.
            statefiles.remove(self.repo.gitdir, JOURNAL)
            return False
        journal = _Journal.of(record, self.journal)
        self._break_stale_locks(journal.locks, journal.since)
        self.files.remove_tmp_files(journal.paths)
        if journal.head is not None:  # an interrupted switch: finish moving HEAD, then the files
            self.repo.set_head(journal.head, COMMITTER, None, None)
        for n, (ref, old, new) in enumerate(journal.moves):
            tip = self.repo.read_ref(ref)
            if tip == old and tip != new:
                self.repo.cas_ref(ref, old, new, COMMITTER, "gitspace: finish interrupted op")
            elif tip != new and n == 0:
                journal.paths = []  # someone outside gitspace moved it: leave their work alone
                break
        if journal.at is not None and journal.paths:  # (a created branch or tag has no files)
            tree = self.repo.commit(journal.at).tree
            wanted: dict[str, State] = {}
            for rel in journal.paths:
                entry = self.repo.entry_at(tree, rel)
                want = None if entry is None or entry.is_tree else (
                    self.repo.read_blob(entry.sha), entry.mode)
                try:
                    if self.files.read(rel) != want:
                        wanted[rel] = want
                except (FileRefused, ToolFailed):
                    pass  # a fifo or the like appeared there meanwhile: an outside change, left
            self.put_files(wanted, lenient=True)
            if journal.index:
                self.sync_index(journal.paths, journal.at)
        self.journal_remove()
        return True

    def _break_stale_locks(self, refs: list[str], since: int | None, wait: float = 0.5) -> None:
        """Remove the lock files a crashed change left behind.

        We hold the checkout's lock and a journal exists, so the process that wrote it died
        mid-change; a ref/index/HEAD lock taken after its journal (or ``since``) is its own (or
        its git child's), unless a live git process is at work in this repository.
        """
        if since is None:
            since = self.journal.stat().st_mtime_ns if self.journal.exists() else 0
        locks = [self.repo.commondir / f"{ref}.lock" for ref in refs]
        break_stale_locks([*locks, self.repo.gitdir / "index.lock",
                           self.repo.gitdir / "HEAD.lock"], since, self.repo, wait)


@record()
class _Journal:
    """A journal as read back: this version's, or an older one's (``ref``/``old``/``new``, and a
    pull's ``locks`` since ``since``). ``of`` raises ValueError for anything of another shape:
    every ref a name under ``refs/``, every commit an object id, every path a plain one."""

    moves: list[tuple[str, str | None, str | None]]
    at: str | None
    head: str | None
    paths: list[str]
    index: bool
    locks: list[str]
    since: int | None

    @classmethod
    def of(cls, record: object, path: Path) -> _Journal:
        """The journal ``record`` holds, or StateRefused when it is not one gitspace writes (a
        crash never leaves one: it is written whole, by rename), and nothing in it is acted on."""
        try:
            return cls._parsed(record)
        except ValueError:
            raise statefiles.StateRefused(
                f"{path} is not an op journal gitspace wrote, so no change was finished from it.",
                hint=f"Move {path} away, then run the command again; check with 'git status' "
                     "that the work tree holds what you expect.") from None

    @classmethod
    def _parsed(cls, record: object) -> _Journal:
        if not isinstance(record, dict):
            raise ValueError("not a journal")
        moves = [_move(m) for m in _list(record.get("moves", []))]
        ref = record.get("ref")
        if ref is not None and not moves:
            moves = [_move([ref, record.get("old"), record.get("new")])]
        at = object_id(record.get("at", record.get("new") if ref is not None else None))
        paths = [_path(rel) for rel in _list(record.get("paths", []))]
        locks = [m[0] for m in moves] + [ref_name(r) for r in _list(record.get("locks", []))]
        head = record.get("head")
        if head is not None:
            ref_name(f"refs/heads/{head}")
        index, since = record.get("index", True), record.get("since")
        if not isinstance(index, bool) or not (since is None or type(since) is int):
            raise ValueError("not a journal")
        return cls(moves, at, head, paths, index, locks, since)


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise ValueError("not a journal")
    return value


def _path(value: object) -> str:
    if not isinstance(value, str) or not is_plain(value):
        raise ValueError(f"not a work-tree path: {value!r}")
    return value


def _move(value: object) -> tuple[str, str | None, str | None]:
    if not isinstance(value, list) or len(value) != 3:
        raise ValueError("not a journal")
    return ref_name(value[0]), object_id(value[1]), object_id(value[2])


def ref_name(value: object) -> str:
    """``value``, a ref name under ``refs/`` that git would accept (``git check-ref-format``:
    ``gitnames.ref_refusal``), or ValueError: what a journal (read back as untrusted data) may
    name."""
    if not isinstance(value, str) or not value.startswith("refs/") \
            or gitnames.ref_refusal(value) is not None:
        raise ValueError(f"not a ref name: {value!r}")
    return value


def object_id(value: object) -> str | None:
    """``value``, None or a full object id, or ValueError."""
    if value is not None and not (isinstance(value, str) and _SHA.fullmatch(value)):
        raise ValueError(f"not an object id: {value!r}")
    return value


_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _record(change: Change, paths: list[str]) -> dict[str, object]:
    """The journal of ``change``: what ``recover`` needs to finish it."""
    record: dict[str, object] = {"moves": [[m.ref, m.old, m.new] for m in change.refs],
                                 "at": change.at, "paths": paths if change.at else []}
    if change.head is not None:
        record["head"] = change.head
    if not change.index:
        record["index"] = False
    return record


@contextmanager
def hold_lock(gitdir: Path, timeout: float = 30.0,
              busy: LockTimeout | None = None) -> Iterator[None]:
    """Hold the lock of one checkout's gitspace state folder (one writer at a time there). A
    refused write inside it (disk full, no permission, I/O error: ``errors.system_hint``) leaves it
    as WriteFailed, an expected error: the code inside has rolled back whatever it wrote before
    the error surfaces."""
    busy = busy or LockTimeout(
        f"Another gitspace process held the workspace lock for {timeout:.0f} s.",
        hint="Wait for it to finish, then run the command again.")
    with lockfile.flocked(gitdir, "gitspace/lock", timeout, busy), refused_writes():
        yield


def break_stale_locks(locks: Iterable[Path], since_ns: int, repo: GitRepo,
                      wait: float = 0.5) -> None:
    """Remove each of ``locks`` taken at or after ``since_ns`` (the crashed process's journal),
    and only those: an older lock belongs to someone else and stays, and so does every lock while
    a live git process is at work in ``repo`` (its work tree or git folders: git keeps
    ``index.lock`` for as long as ``git commit -a`` waits for its editor). A git process
    finishing within ``wait`` seconds is waited for. Without /proc, a lock that outlives ``wait``
    is taken for the crashed one's."""
    locks = list(locks)
    deadline = time.monotonic() + wait
    for lock in locks:
        while lock.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    stale = []
    for lock in locks:
        try:
            if lock.stat().st_mtime_ns >= since_ns:
                stale.append(lock)
        except FileNotFoundError:
            pass
    if not stale or lockfile.git_running_in({repo.root, repo.gitdir, repo.commondir}):
        return
    for lock in stale:
        lock.unlink(missing_ok=True)


def _sentence(e: BaseException) -> str:
    if isinstance(e, GitspaceError):
        return e.message
    if isinstance(e, OSError) and system_hint(e.errno) is not None:
        return write_failed(e).message
    return f"{type(e).__name__}: {e}"


def _hint(e: BaseException) -> str | None:
    if isinstance(e, GitspaceError):
        return e.hint
    return system_hint(e.errno) if isinstance(e, OSError) else None


@contextmanager
def refused_writes() -> Iterator[None]:
    """Turn a write the system refused (``errors.system_hint``) into WriteFailed, an expected error.
    Only around code that changes nothing, or rolls back what it changed, when it fails."""
    try:
        yield
    except OSError as e:
        if system_hint(e.errno) is None:
            raise
        raise write_failed(e) from e


def write_failed(e: OSError) -> WriteFailed:
    """The expected error for a write the system refused (an errno ``errors.system_hint`` knows)."""
    what = e.strerror or os.strerror(e.errno or 0)
    where = f" ({os.fsdecode(e.filename)})" if e.filename else ""
    return WriteFailed(f"A write failed: {what}{where}. Nothing was changed.",
                       hint=system_hint(e.errno))


def _split_note(entries: int) -> str:
    return (f"The index now holds {entries:,} entries, so gitspace writes it in git's split-index "
            "format (core.splitIndex), which keeps each op fast. git reads it; tools built on "
            "libgit2 (GitKraken, many IDE plugins) and dulwich do not. To keep a plain index, run "
            "'git config core.splitIndex false' in this workspace.")
