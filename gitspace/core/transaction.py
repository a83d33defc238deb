"""The op transaction: one tool call that changes files becomes exactly one commit.

Invariants:
- Work tree, index and branch ref move together, under one lock per work tree. Order: objects
  (harmless if orphaned) → journal → compare-and-swap of the branch ref → work-tree files (each by
  tmp-file-and-rename through ``storage.files``: deletions first, never through a link) →
  index → journal removed. A failure before the ref moves changes nothing; a failure after it is
  rolled back (ref swapped back, files restored) before the error surfaces.
- The index holds exactly the tree's entries for the paths an op touched: never a file and a
  folder of one name (``fd`` and ``fd/x``).
- A crash at any point leaves a journal; ``recover`` finishes the op from it (roll forward), so an
  op whose ref swap happened is never lost and no half-applied op stays visible.
- Outside changes to a path the op reads or writes are first committed as their own op (source
  ``external``), never folded into the tool's commit. Only touched paths are examined: an op never
  scans the tree.
- A tool whose stage changes nothing produces no commit.
"""

from __future__ import annotations

import json
import os
import stat as statmod
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .. import faults
from ..errors import (
    Conflict,
    FileRefused,
    GitspaceError,
    LockTimeout,
    PathRefused,
    ToolFailed,
    WriteFailed,
    system_hint,
)
from ..storage import gitindex, ledger, lockfile, racyindex
from ..storage.files import Files, InTheWay, State, order, parts_of
from ..storage.gitrepo import GitRepo
from ..storage.objects import FILE_MODE, Entry, Identity
from .paths import check_tree_paths
from .result import UNCHANGED, Result

COMMITTER = Identity("gitspace", "gitspace@localhost")
INDEX_TRIES = 5  # loads of an index another git process keeps replacing under us


@dataclass(frozen=True)
class IndexUndo:
    """What ``sync_index`` replaced, to put back: the old raw entries of its paths, or None when
    the index is in a format only git writes (then git re-syncs them instead)."""

    entries: dict[bytes, tuple[bytes, int] | None] | None


class Host(Protocol):
    """What a transaction needs of the workspace it runs in (``workspace.Workspace`` is one).
    Declared here so this module never imports the workspace that builds on it."""

    repo: GitRepo
    root: Path
    max_file_bytes: int
    session: str | None
    external_author: str
    transactions: Transactions

    @property
    def external_identity(self) -> Identity: ...

    def branch(self) -> str: ...

    def tip(self) -> str: ...

    def tree(self) -> str: ...


@dataclass
class Outcome:
    """What a tool decided: its result text, subject line, and (via the Txn) its writes."""

    text: str
    subject: str
    body: str = ""
    when: float | None = None  # the commit's time, when the tool's result depends on it


def disk_state(
    root: Path, rel: str, stats: dict[str, os.stat_result] | None = None,
    limit: int | None = None,
) -> State:
    """(content, git mode) of work-tree path ``rel``, None when absent, read without following
    any link (see ``storage.files``). The stat kept in ``stats`` is taken before the content
    is read; a regular file larger than ``limit`` is refused before it is read."""
    return Files(root).read(rel.rstrip("/"), limit=limit, stats=stats)  # "sub/": a folder


class Txn:
    """The view a tool's stage works on: reads see the work tree, writes are staged in memory."""

    def __init__(self, ws: Host, tip: str, tree: str) -> None:
        self.ws = ws
        self.tip = tip
        self.tree = tree
        self.writes: dict[str, tuple[bytes, int] | None] = {}
        self.disk: dict[str, tuple[bytes, int] | None] = {}
        self.stats: dict[str, os.stat_result] = {}
        self.applied: set[str] = set()  # writes already on disk (a script made them)

    def _disk(self, rel: str) -> tuple[bytes, int] | None:
        if rel not in self.disk:
            try:
                self.disk[rel] = self.ws.transactions.files.read(
                    rel, limit=self.ws.max_file_bytes, stats=self.stats)
            except PermissionError as e:
                raise ToolFailed(f"{rel} cannot be read: {e.strerror}.") from None
        return self.disk[rel]

    def read(self, rel: str) -> bytes | None:
        """Current content of a file (pending writes first, then the work tree)."""
        if rel in self.writes:
            staged = self.writes[rel]
            return None if staged is None else staged[0]
        state = self._disk(rel)
        return None if state is None else state[0]

    def mode(self, rel: str) -> int:
        staged = self.writes.get(rel)
        state = staged if staged is not None else self._disk(rel)
        return state[1] if state is not None else FILE_MODE

    def write(self, rel: str, data: bytes, mode: int | None = None) -> None:
        if len(data) > self.ws.max_file_bytes:
            raise FileRefused(
                f"Refused to write {rel}: {len(data):,} bytes is over the "
                f"{self.ws.max_file_bytes:,}-byte cap.",
                hint="Split the content into smaller files.",
            )
        state = (data, mode if mode is not None else self.mode(rel))
        # Before any object is written: git fsck reports bad objects even when nothing refers to
        # them.
        check_tree_paths({rel: state}, f"Writing {rel}")
        self._disk(rel)
        self.writes[rel] = state

    def delete(self, rel: str) -> None:
        check_tree_paths({rel: None}, f"Deleting {rel}")
        self._disk(rel)
        self.writes[rel] = None

    def already_written(self, rel: str, before: State, after: State) -> None:
        """Record a change something already made on disk (a mutating script): ``before`` is what
        was there, and a failed op puts it back."""
        self.disk[rel] = before
        self.writes[rel] = after
        self.applied.add(rel)

    def entry(self, rel: str) -> Entry | None:
        return self.ws.repo.entry_at(self.tree, rel)


# What a mutating tool hands the transaction: it stages its writes on the Txn and says what it
# did. (The agent's plan, plan.md and the plan_* tools, is another thing: tools/plan.py.)
Stage = Callable[[Txn], Outcome]


class Transactions:
    """Runs stages as ops for one workspace: locking, journaling, committing, recovering."""

    def __init__(self, ws: Host, *, durable: bool = False) -> None:
        self.ws = ws
        self.repo: GitRepo = ws.repo
        self.files = Files(ws.root, durable=durable, private=ws.repo.private)
        self.state_dir = private_folder(ws.repo.gitdir, "gitspace")
        self.journal = self.state_dir / "journal.json"
        self._split_config: bool | None | str = "unread"  # core.splitIndex, read when it matters
        self.notes: list[str] = []  # said once to the user: collected by the next Result

    # -- locking -----------------------------------------------------------------------------

    def lock(self, timeout: float = 30.0) -> AbstractContextManager[None]:
        return hold_lock(self.state_dir, timeout)

    # -- the transaction ---------------------------------------------------------------------

    def run(
        self,
        op: ledger.Op,
        stage: Stage,
        author: Identity,
    ) -> Result:
        """Run ``stage`` as op ``op``: its Result is the op, or "unchanged" with no commit."""
        with self.lock():
            self.recover_locked()
            branch = self.ws.branch()
            tip = self.repo.read_ref(f"refs/heads/{branch}")
            if tip is None:
                raise GitspaceError(f"Branch {branch} has no commits.")
            tree = self.repo.commit(tip).tree
            txn = Txn(self.ws, tip, tree)
            outcome = stage(txn)
            try:
                return self._commit(op, txn, outcome, author, branch)
            except BaseException:
                self._take_back(txn)
                raise

    def _take_back(self, txn: Txn) -> None:
        """Put back what a failed op's stage had already changed on disk (a mutating script)."""
        self.apply({rel: txn.disk[rel] for rel in txn.applied
                    if self.files.read(rel) != txn.disk[rel]}, lenient=True)

    def _commit(
        self, op: ledger.Op, txn: Txn, outcome: Outcome, author: Identity, branch: str
    ) -> Result:
        repo = self.repo
        external: dict[str, Entry | None] = {}
        for rel, state in txn.disk.items():
            found = entry_of(repo, state, write=False)
            recorded = txn.entry(rel)
            if recorded is not None and recorded.is_tree:
                recorded = None  # a folder in the tree: no file there, as on disk when it agrees
            if found != recorded:
                external[rel] = found
        tool_changes: dict[str, Entry | None] = {}
        for rel, staged in txn.writes.items():
            if staged != txn.disk.get(rel):
                tool_changes[rel] = entry_of(repo, staged, write=True)
        if not tool_changes:
            return Result(ok=True, text=UNCHANGED, tool=op.tool)
        base_tree, parent, ext_id = txn.tree, txn.tip, None
        if external:
            for rel, state in txn.disk.items():
                if rel in external and state is not None:
                    repo.write_blob(state[0])
            parent, base_tree, ext_id = self.commit_external(
                parent, base_tree, external, f"Outside changes found before {op.tool}.")
        new_tree = repo.update_tree(base_tree, tool_changes)
        body = "\n\n".join(p for p in (outcome.body.strip(), ledger.result_body(outcome.text)) if p)
        message = ledger.encode_message(op, outcome.subject, body)
        commit = repo.write_commit(new_tree, [parent], message, author, COMMITTER, outcome.when)
        known = {rel: st for rel, st in txn.stats.items() if rel not in txn.writes}
        # A file or link recorded where the tree had a folder drops every file beneath it from
        # the tree: their index entries go too (never in writes: nothing is written to them).
        files_at = [rel for changes in (external, tool_changes) for rel, entry in changes.items()
                    if entry is not None and not entry.is_tree]
        beneath = {f"{rel}/{path}": None for rel in files_at
                   if (old := repo.entry_at(txn.tree, rel)) is not None and old.is_tree
                   for path, _ in repo.walk_files(old.sha)}
        self.publish(branch, txn.tip, commit, txn.writes, {**beneath, **txn.disk}, known,
                     author, op.tool)
        self.repo.maybe_pack()
        return Result(ok=True, text=outcome.text, tool=op.tool, op=op.op_id, commit=commit,
                      changed=sorted(tool_changes), external_op=ext_id, notes=self.take_notes())

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    def commit_external(
        self, parent: str, tree: str, changes: dict[str, Entry | None], note: str
    ) -> tuple[str, str, str]:
        """Commit outside changes (blobs already written) on ``parent``: (commit, tree, op id)."""
        paths = sorted(changes)
        op = ledger.Op(
            op_id=ledger.new_op_id(),
            tool="external_edit",
            args={"count": len(paths), "paths": paths[:100]},
            source="external",
            agent=self.ws.external_author,
            session=self.ws.session,
        )
        new_tree = self.repo.update_tree(tree, changes)
        body = note + "\n\nFiles:\n" + "\n".join(ledger.canonical_json(p) for p in paths[:200])
        message = ledger.encode_message(op, f"external edit of {_summary(paths)}", body)
        commit = self.repo.write_commit(new_tree, [parent], message, self.ws.external_identity,
                                        COMMITTER)
        return commit, new_tree, op.op_id

    def publish(
        self,
        branch: str,
        old: str | None,
        new: str,
        writes: dict[str, tuple[bytes, int] | None],
        before: Mapping[str, tuple[bytes, int] | None],
        known: dict[str, os.stat_result],
        ident: Identity,
        tool: str,
        locks: Sequence[str] = (),
        keep_journal: bool = False,
        locked_since: int | None = None,
    ) -> None:
        """Move ``branch`` from ``old`` to ``new``, write ``writes`` to the work tree, and sync the
        index for every path in ``before`` (their pre-op disk states, used to roll back).

        ``locks``: other refs a caller has held locked since ``locked_since`` (the mtime of the
        journal it wrote first: a pull's ref transaction), broken by recovery if the process
        dies; ``keep_journal``: that caller removes the journal once its own work is done
        (finishing this op again on recovery is harmless)."""
        ref = f"refs/heads/{branch}"
        check_tree_paths(writes, f"gitspace: {tool}")  # (before the journal: nothing moves)
        touched = sorted(set(before) | set(writes))
        record: dict[str, object] = {"ref": ref, "old": old, "new": new, "paths": touched}
        if locks:
            record["locks"] = list(locks)
            record["since"] = locked_since
        self.journal_write(record)
        try:
            self.repo.cas_ref(ref, old, new, ident, f"gitspace: {tool}")
        except BaseException:
            self.cancel_journal()
            raise
        # A path counts as written once it changed: put_file changes nothing when it fails
        # (but for a failed flush after its rename, which it reports), and "restoring" a path
        # it refused (a folder in the way) would destroy what is there.
        written: list[str] = []
        index: IndexUndo | None = None
        try:
            stats = self.apply(writes, done=written)
            index = self.sync_index(touched, new, {**known, **stats})
            if not keep_journal:
                self.journal_remove()
        except BaseException as failure:
            if old is None:
                raise  # a branch's first commit: the journal stays, the next open finishes it
            self.roll_back(failure, written, before, touched, index, lambda: self.repo.cas_ref(
                ref, new, old, ident, f"gitspace: roll back failed {tool}"), old)
            raise

    def roll_back(self, failure: BaseException, written: list[str],
                  before: Mapping[str, State], paths: list[str], index: IndexUndo | None,
                  move_back: Callable[[], None], commit: str) -> None:
        """Undo a change that failed past its ref (or HEAD) move: put ``written`` back to their
        ``before`` states, the index entries of ``paths`` back (``index``: what ``sync_index``
        returned, None when it did not store), then ``move_back()``, then drop the journal. If
        a step fails, the journal stays and the next open finishes the change instead
        (WriteFailed says so). ``commit`` is where the ref goes back to."""
        try:
            self.apply({rel: before.get(rel) for rel in written}, lenient=True)
            if index is not None:
                self._restore_index(index, paths, commit)
            move_back()
        except Exception as e:
            raise WriteFailed(
                f"{_sentence(failure)} Rolling it back failed too ({_sentence(e)}), so the next "
                "gitspace command in this workspace will finish it from its journal.",
                hint=_hint(failure)) from failure
        self.cancel_journal()

    def create_ref(self, ref: str, target: str, ident: Identity, message: str) -> None:
        """Create ``ref`` (a branch or checkpoint tag), journaled: a crash never strands its lock."""
        with self.lock():
            self.recover_locked()
            self.journal_write({"ref": ref, "old": None, "new": target, "paths": []})
            try:
                self.repo.cas_ref(ref, None, target, ident, message)
            except BaseException:
                self.cancel_journal()
                raise
            try:
                self.journal_remove()
            except BaseException as failure:
                self.roll_back(failure, [], {}, [], None, lambda: self.repo.cas_ref(
                    ref, target, None, ident, f"{message}: rolled back"), target)
                raise

    def delete_ref(self, ref: str, old: str, ident: Identity, message: str) -> None:
        """Delete ``ref`` if it still points at ``old`` (undoing a ``create_ref``)."""
        with self.lock():
            self.repo.cas_ref(ref, old, None, ident, message)

    # -- files and index ---------------------------------------------------------------------

    def apply(self, changes: Mapping[str, State], *, lenient: bool = False,
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

    def sync_index(
        self, paths: Iterable[str], commit: str, known: dict[str, os.stat_result] | None = None
    ) -> IndexUndo:
        """Make the index entries of ``paths`` match ``commit``'s tree and the work tree.

        ``known`` holds stats taken before content was hashed; other paths are stat'ed now (we
        just wrote them). Returns what ``_restore_index`` needs to put the entries back.
        """
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

    def _change_index(self, change: Callable[[gitindex.Index], None], doing: str) -> None:
        """Load the index, ``change`` it, store it; once more when another git process replaced
        it meanwhile (their change is kept, ours redone on it)."""
        index_path = self.repo.gitdir / "index"
        for _ in range(INDEX_TRIES):
            # No defensive copy of a 10,000-entry index per op: on any failure we forget it.
            index = gitindex.load(index_path, copy=False)
            try:
                change(index)
                was_split = index.shared is not None
                split = self._split_index(index)
                since = index.origin[2] // racyindex.NS if index.origin else None
                gitindex.store(index_path, index, split=split, private=self.repo.private)
                if since is not None:
                    self._smudge_unseen(index_path, index, since, split)
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
                       split: bool) -> None:
        """git's racy-git rule for the index just stored: an entry it now trusts whose file
        changed unseen in the entry's own second is smudged (racyindex.unseen_changes), and the
        index stored again."""
        assert index.origin is not None
        unseen = racyindex.unseen_changes(self.ws.root, index, since, index.origin[2] // racyindex.NS)
        if unseen:
            for path in unseen:
                index.raw[path] = gitindex.smudged(index.raw[path])
                index.changed.add(path)
            gitindex.store(index_path, index, split=split, private=self.repo.private)

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
        tmp = self.journal.with_suffix(".tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as out:
                faults.hit("journal.write")
                out.write(json.dumps(record))
            os.replace(tmp, self.journal)
        except BaseException:
            tmp.unlink(missing_ok=True)  # (a full disk: nothing half-written stays behind)
            raise

    def journal_remove(self) -> None:
        faults.hit("journal.remove")
        self.journal.unlink(missing_ok=True)

    def cancel_journal(self) -> None:
        """Drop the journal of a change that did not happen (or was rolled back). If it cannot be
        removed it is overwritten by one that finishes nothing: a stale journal must never
        re-apply a change that was reported failed."""
        try:
            self.journal_remove()
        except BaseException:
            try:
                self.journal_write({"ref": None, "paths": []})
            except BaseException:
                pass  # the first error says what happened; nothing more can be done here
            raise

    def recover(self) -> bool:
        if not self.journal.exists():
            return False
        with self.lock():
            return self.recover_locked()

    def recover_locked(self) -> bool:
        """Finish an op a crashed process left half-applied. True if there was one."""
        try:
            record = json.loads(self.journal.read_text())
        except FileNotFoundError:
            return False
        except ValueError:
            # The journal is written by rename, so a torn one means it never took effect.
            self.journal.unlink(missing_ok=True)
            return False
        ref, old, new = record["ref"], record.get("old"), record.get("new")
        record["paths"] = [rel for rel in record.get("paths", []) if _plain(rel)]
        # "locks": refs a pull's ref transaction (a git child) had locked alongside, since "since".
        self._break_stale_locks([r for r in [ref, *record.get("locks", [])] if r],
                                record.get("since"))
        self.files.remove_tmp_files(record["paths"])
        if ref is None:  # a pull that moved no checked-out branch (only its locks to clear), or
            self.journal_remove()  # a change that was cancelled (see cancel_journal)
            return True
        if "head" in record:  # an interrupted switch: finish moving HEAD, then the files
            self.repo.set_head(record["head"], COMMITTER, None, None)
        tip = self.repo.read_ref(ref)
        if tip == old:
            self.repo.cas_ref(ref, old, new, COMMITTER, "gitspace: finish interrupted op")
            tip = new
        if tip == new and record["paths"]:  # (a created branch or tag has no files to finish)
            tree = self.repo.commit(new).tree
            wanted: dict[str, State] = {}
            for rel in record["paths"]:
                entry = self.repo.entry_at(tree, rel)
                want = None if entry is None or entry.is_tree else (
                    self.repo.read_blob(entry.sha), entry.mode)
                try:
                    if self.files.read(rel) != want:
                        wanted[rel] = want
                except (FileRefused, ToolFailed):
                    pass  # a fifo or the like appeared there meanwhile: an outside change, left
            self.apply(wanted, lenient=True)
            self.sync_index(record["paths"], new)
        # Otherwise something outside gitspace moved the ref: leave its work alone.
        self.journal_remove()
        return True

    def _break_stale_locks(self, refs: list[str], since: int | None, wait: float = 0.5) -> None:
        """Remove the lock files a crashed op left behind.

        We hold the workspace lock and a journal exists, so the process that wrote it died mid-op;
        a ref/index/HEAD lock taken after its journal (or ``since``) is its own (or its git
        child's), unless a live git process is at work in this repository.
        """
        if since is None:
            since = self.journal.stat().st_mtime_ns if self.journal.exists() else 0
        locks = [self.repo.commondir / f"{ref}.lock" for ref in refs]
        break_stale_locks([*locks, self.repo.gitdir / "index.lock", self.repo.gitdir / "HEAD.lock"],
                          since, self.repo, wait)


@contextmanager
def hold_lock(state_dir: Path, timeout: float = 30.0) -> Iterator[None]:
    """Hold the lock of one checkout's gitspace state folder (one writer at a time there). A
    refused write inside it (disk full, no permission, I/O error: ``errors.system_hint``) leaves it
    as WriteFailed, an expected error: the code inside has rolled back whatever it wrote before
    the error surfaces."""
    busy = LockTimeout(f"Another gitspace process held the workspace lock for {timeout:.0f} s.",
                       hint="Wait for it to finish, then run the command again.")
    with lockfile.flocked(state_dir / "lock", timeout, busy), refused_writes():
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


def checkout_changes(ws: Host, old_tree: str, new_tree: str, doing: str,
                     hint: str) -> tuple[dict[str, State], dict[str, State]]:
    """What moving the work tree from ``old_tree`` to ``new_tree`` writes, and what each of those
    paths holds on disk now. A path whose disk content is not ``old_tree``'s is an outside change
    the move would overwrite: Conflict, with nothing changed."""
    repo = ws.repo
    writes: dict[str, State] = {}
    before: dict[str, State] = {}
    for change in repo.diff_trees(old_tree, new_tree):
        disk = ws.transactions.files.read(change.path)
        recorded = None if change.old is None else (repo.read_blob(change.old.sha), change.old.mode)
        if disk != recorded:
            raise Conflict(f"{doing} would overwrite {change.path}, which has changes not "
                           "recorded yet.", hint=hint)
        before[change.path] = disk
        writes[change.path] = None if change.new is None else (repo.read_blob(change.new.sha),
                                                                change.new.mode)
    check_tree_paths(writes, doing)
    return writes, before


def entry_of(repo: GitRepo, state: tuple[bytes, int] | None, *, write: bool) -> Entry | None:
    if state is None:
        return None
    data, mode = state
    sha = repo.write_blob(data) if write else repo.hash_object("blob", data)
    return Entry(mode, sha)


def _plain(rel: str) -> bool:
    try:
        parts_of(rel)
    except PathRefused:
        return False
    return True


def private_folder(parent: Path, name: str) -> Path:
    """``parent/name``, made if missing, and refused if it is a link: gitspace keeps its state
    (lock, journal, agents' worktrees) only in a folder of its own inside the git directory."""
    folder = parent / name
    try:
        os.mkdir(folder)
    except FileExistsError:
        pass
    if not statmod.S_ISDIR(os.lstat(folder).st_mode):
        raise GitspaceError(
            f"{folder} is not a folder (a link or a file stands there), so gitspace will not keep "
            "its state in it.", hint=f"Move {folder} away, then run the command again.")
    return folder


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


def _summary(paths: list[str]) -> str:
    return paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"
