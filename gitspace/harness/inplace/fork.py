"""``gitspace fork OP`` in a person's own checkout: the work-tree files as they were right after
that op, as one op on the line (run through the recorder with ``act``, as undo and rewind are:
``route.record_in``).

Invariants:
- Only work-tree files change: never ``.git/index``, HEAD or a branch. The change is one op on
  the checkout's line (tool ``fork``, by the person's git identity, ``Gitspace-Session`` the new
  session's id, ``Gitspace-Undo-Of`` naming the ops it took back): ``gitspace undo --op`` takes
  it back in turn, and the new session's calls, recorded on the same line after it, carry the
  new session's id. That is how the fork's calls stay apart from the original's in place: the
  person's branch, and so the line, is one, and the sessions tell the two runs apart.
- What is taken back is every agent op after the op on the line (a harness's call, or an earlier
  fork), newest first, each as a three-way merge with what came after it: the person's own
  recorded changes since stay. A change that cannot be merged refuses the whole fork.
- The person's edits not yet recorded are never overwritten: a file the fork would write whose
  content differs from the line's refuses the fork, changing nothing (and so does one that is
  over the size cap, not a plain file, or a Git LFS file). So does the op not being on the line
  the checkout is on (its own commits, from its start: ``line.walk``), and a harness call still
  running here. A file a sparse checkout leaves out stays out.
- The files written and the line's ref move together through the one writer (the place's
  publish, ``line.move_with_files``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...core.identity import Identity
from ...errors import Conflict, FileRefused, PathRefused
from ...storage import ledger, privateindex
from ...storage.files import State
from ...storage.objects import Entry
from .. import state
from . import line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..recorder import Recorder

FORK = "fork"  # the tool name of a fork's op (a harness's fork; gitspace's own loop branches)


@dataclass(frozen=True)
class Made:
    """What the fork did on the line: its op (None: the files already were so), the files it
    wrote, the ops it took back, and the line's tip after it."""

    op: str | None
    files: list[str]
    took_back: list[str]
    tip: str


def act(commit: str, args: dict[str, str], session: str,
        checked: Callable[[], None]) -> Callable[[Recorder], Made]:
    """What the recorder runs under the lock (``route.record_in``): make the files as right after ``commit``
    (an op's commit on this line), recorded as a fork op of ``session`` with ``args``;
    ``checked`` runs once nothing is left to refuse (the fork writes its transcript then)."""

    def run(rec: Recorder) -> Made:
        busy(state.running(rec.gitdir))
        repo = rec.repo
        if not any(sha == commit for sha, _ in line.walk(repo, rec.parent)):
            from .takeback import here_of

            raise Conflict(f"Op {args.get('op')} is not on the line your checkout is on "
                           f"({here_of(rec).ref}), so its files cannot be brought back here.",
                           hint="Switch back to the branch it was recorded on, then fork again.")
        ops = _agent_ops_since(rec, commit)
        entries = _taken_back(rec, [c for _, c in ops])
        outside_cone = privateindex.sparse(repo, [r for r in entries if rec.files.stat(r) is None])
        entries = {rel: e for rel, e in entries.items() if rel not in outside_cone}
        disk = {rel: _disk(rec, rel) for rel in entries}
        yours = sorted(rel for rel, found in disk.items()
                       if _entry(rec, found) != repo.entry_at(rec.tree, rel))
        if yours:
            raise Conflict(f"Your changes to {', '.join(yours[:5])} are not recorded yet, and "
                           "the fork would overwrite them. Nothing was changed.",
                           hint="Commit them, stash them or move them away, then fork again.")
        checked()
        if not entries:
            return Made(None, [], [], rec.parent)
        person, agent = rec.person()
        taken = tuple(op.op_id for op, _ in ops)
        op = Identity(FORK, agent=agent, session=session).op(args, undo_of=taken)
        body = (f"Run by {person.name} in their own checkout: the files as they were right after "
                f"op {args.get('op')}, for the new session {session}; only work-tree files "
                "changed, never the index or HEAD.")
        rec.record(op, entries, f"fork after {str(args.get('op'))[-8:]} as session "
                   f"{session[:8]}", body, person)
        rec.write_files({rel: None if e is None else (repo.read_blob(e.sha), e.mode)
                         for rel, e in entries.items()}, disk)
        return Made(op.op_id, sorted(entries), list(taken), rec.parent)

    return run


def busy(running: list[state.Running]) -> None:
    """Refuse while a harness call is announced here and not finished: the files would change
    under it, and its after hook would record the fork's writes as its own."""
    if running:
        r = running[0]
        raise Conflict(
            f"{r.agent} is running a call here ({r.tool}{' ' + r.use_id if r.use_id else ''}, "
            f"session {r.session or '?'}), so gitspace will not change the files under it. "
            "Nothing was changed.",
            hint="Let the call finish (or stop the harness), then fork again. A call whose "
                 "harness was killed is forgotten at its session's next turn end.")


def _agent_ops_since(rec: Recorder, commit: str) -> list[tuple[ledger.Op, str]]:
    """The agent's ops after ``commit`` on the line, newest first, that nothing took back yet
    (a harness's calls and earlier forks; the person's own ops stay)."""
    found: list[tuple[ledger.Op, str]] = []
    undone: set[str] = set()
    for sha, op in line.walk(rec.repo, rec.parent):
        if sha == commit:
            break
        mine = op.source == "harness" or op.tool == FORK
        if mine and op.op_id not in undone:
            found.append((op, sha))
        elif not mine:
            undone |= set(op.undo_of)
    return found


def _taken_back(rec: Recorder, commits: list[str]) -> dict[str, Entry | None]:
    """The line's entries that take back ``commits`` (newest first), each merged with what
    changed since it; only the paths that end up different from the line's tip."""
    repo = rec.repo
    now: dict[str, Entry | None] = {}
    for sha in commits:
        c = repo.commit(sha)
        before = repo.commit(c.parents[0]).tree
        for change in repo.diff_trees(before, c.tree):
            rel = change.path
            ours = now[rel] if rel in now else repo.entry_at(rec.tree, rel)
            if ours == change.new:
                now[rel] = change.old
            elif ours != change.old:
                merged = repo.merge_entry(ours, change.new, change.old)
                if merged is None:
                    raise Conflict(f"{rel} changed since in the same places, so the agent's "
                                   "later changes to it cannot be taken back. Nothing was "
                                   "changed.", hint="Fork at a later op, or edit the file by hand.")
                now[rel] = merged
    return {rel: e for rel, e in now.items() if e != repo.entry_at(rec.tree, rel)}


def _disk(rec: Recorder, rel: str) -> State:
    try:
        found = rec.files.read(rel, limit=rec.options.max_file_bytes)
    except (FileRefused, PathRefused) as e:
        raise Conflict(f"{rel} cannot be brought back: {e.message} Nothing was changed.",
                       hint="Move it away, or shrink it, then fork again.") from None
    if found is not None and privateindex.filtered(rec.repo, [rel]):
        raise Conflict(f"{rel} is a Git LFS file (a filter owns it), which gitspace never "
                       "writes. Nothing was changed.", hint="Bring it back with git lfs.")
    return found


def _entry(rec: Recorder, found: State) -> Entry | None:
    return None if found is None else Entry(found[1], rec.repo.hash_object("blob", found[0]))
