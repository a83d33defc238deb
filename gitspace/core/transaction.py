"""The op transaction: one tool call that changes files becomes exactly one commit.

Invariants:
- An op runs under its checkout's lock (``Writer.locked``): its stage stages writes in memory
  (``Txn``), then the op's objects are written and one ``Change`` moves branch, files and index
  together through ``Writer.apply``, whose order, rollback and crash recovery hold for it (see
  ``writer.py``).
- Outside changes to a path the op reads or writes are first committed as their own op (source
  ``external``), never folded into the tool's commit. Only touched paths are examined: an op never
  scans the tree.
- A tool whose stage changes nothing produces no commit.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..errors import Conflict, FileRefused, GitspaceError, ToolFailed
from ..storage import ledger, opchain
from ..storage.files import Files, State
from ..storage.gitrepo import GitRepo
from ..storage.objects import FILE_MODE, Entry, Signature
from ..storage.records import record
from . import userfiles
from .identity import external_edit
from .paths import check_tree_paths
from .result import UNCHANGED, Result
from .writer import COMMITTER, Change, RefMove, Writer

TYPE_CHECKING = False  # typing is not imported at run time: a read of the CLI starts without it
if TYPE_CHECKING:
    from typing import Protocol
else:
    Protocol = object


class Host(Protocol):
    """What a transaction needs of the workspace it runs in (``workspace.Workspace`` is one).
    Declared here so this module never imports the workspace that builds on it."""

    repo: GitRepo
    root: Path
    max_file_bytes: int
    session: str | None
    writer: Writer
    files: Files

    @property
    def external_author(self) -> str: ...

    @property
    def external_identity(self) -> Signature: ...

    def branch(self) -> str: ...

    def tip(self) -> str: ...

    def tree(self) -> str: ...


@record()
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
        self.moves = False  # the stage moves the work tree to another tree (restore, undo)

    def _disk(self, rel: str) -> tuple[bytes, int] | None:
        if rel not in self.disk:
            try:
                self.disk[rel] = self.ws.files.read(
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


def run(ws: Host, op: ledger.Op, stage: Stage, author: Signature) -> Result:
    """Run ``stage`` as op ``op``: its Result is the op, or "unchanged" with no commit."""
    with ws.writer.locked():
        branch = ws.branch()
        tip = ws.repo.read_ref(f"refs/heads/{branch}")
        if tip is None:
            raise GitspaceError(f"Branch {branch} has no commits.")
        txn = Txn(ws, tip, ws.repo.commit(tip).tree)
        outcome = stage(txn)
        try:
            return _commit(ws, op, txn, outcome, author, branch)
        except BaseException:
            _take_back(ws, txn)
            raise


def _take_back(ws: Host, txn: Txn) -> None:
    """Put back what a failed op's stage had already changed on disk (a mutating script)."""
    ws.writer.apply(Change("gitspace: put back", COMMITTER, lenient=True, files={
        rel: txn.disk[rel] for rel in txn.applied if ws.files.read(rel) != txn.disk[rel]}))


def _commit(ws: Host, op: ledger.Op, txn: Txn, outcome: Outcome, author: Signature,
            branch: str) -> Result:
    repo = ws.repo
    # Before anything is written: an untracked or ignored file of the user's is refused.
    userfiles.refuse_over(repo, txn.disk, {rel: txn.entry(rel) for rel in txn.disk},
                          txn.writes, moves=txn.moves, doing=op.tool)
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
        parent, base_tree, ext_id = commit_external(
            ws, parent, base_tree, external, f"Outside changes found before {op.tool}.",
            session=op.session, caller=(op.parent_session, op.parent_tool_use_id))
    new_tree = repo.update_tree(base_tree, tool_changes)
    body = "\n\n".join(p for p in (outcome.body.strip(), ledger.result_body(outcome.text)) if p)
    message = opchain.message(repo, parent, op, outcome.subject, body)
    commit = repo.write_commit(new_tree, [parent], message, author, COMMITTER, outcome.when)
    known = {rel: st for rel, st in txn.stats.items() if rel not in txn.writes}
    # A file or link recorded where the tree had a folder drops every file beneath it from
    # the tree: their index entries go too (never in writes: nothing is written to them).
    files_at = [rel for changes in (external, tool_changes) for rel, entry in changes.items()
                if entry is not None and not entry.is_tree]
    beneath = {f"{rel}/{path}": None for rel in files_at
               if (old := repo.entry_at(txn.tree, rel)) is not None and old.is_tree
               for path, _ in repo.walk_files(old.sha)}
    ws.writer.apply(Change(f"gitspace: {op.tool}", author,
                           [RefMove(f"refs/heads/{branch}", txn.tip, commit)], at=commit,
                           files=txn.writes, before={**beneath, **txn.disk}, known=known))
    repo.maybe_pack()
    return Result(ok=True, text=outcome.text, tool=op.tool, op=op.op_id, commit=commit,
                  changed=sorted(tool_changes), external_op=ext_id,
                  notes=ws.writer.take_notes())


def commit_external(ws: Host, parent: str, tree: str, changes: dict[str, Entry | None],
                    note: str, *, session: str | None,
                    subject: str | None = None,
                    caller: tuple[str | None, str | None] = (None, None)) -> tuple[str, str, str]:
    """Commit outside changes (blobs already written) on ``parent``, found during ``session``
    (a delegated one: ``caller`` is its parent's session and call, which the op names as the
    session's every op does): (commit, tree, op id); ``subject``: the person's own words for
    them (``snapshot -m``). Only objects are written: the caller's change moves the branch."""
    op, found, body = external_edit(list(changes), note, ws.external_author, session, caller)
    new_tree = ws.repo.update_tree(tree, changes)
    message = opchain.message(ws.repo, parent, op, subject or found, body)
    commit = ws.repo.write_commit(new_tree, [parent], message, ws.external_identity, COMMITTER)
    return commit, new_tree, op.op_id


def checkout_changes(ws: Host, old_tree: str, new_tree: str, doing: str,
                     hint: str) -> tuple[dict[str, State], dict[str, State]]:
    """What moving the work tree from ``old_tree`` to ``new_tree`` writes, and what each of those
    paths holds on disk now. A path whose disk content is not ``old_tree``'s is an outside change
    the move would overwrite: Conflict, with nothing changed."""
    repo = ws.repo
    writes: dict[str, State] = {}
    before: dict[str, State] = {}
    for change in repo.diff_trees(old_tree, new_tree):
        disk = ws.files.read(change.path)
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
