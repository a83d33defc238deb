"""``gitspace undo --op`` and ``gitspace rewind`` in a person's own checkout: work-tree files only
(run through ``commands.undo_op`` and ``commands.rewind``, which hand ``take_back`` to the
recorder).

Invariants:
- Only work-tree files change: never ``.git/index``, HEAD or a branch. Each is itself an op on
  the line (tool ``undo`` or ``rewind``, ``Gitspace-Undo-Of`` naming what it took back, by the
  person's git identity), so nothing is lost: undo it in turn.
- ``undo --op ID`` reverses just that op's change, merged with whatever changed since (a
  three-way merge per file: base the op's result, theirs what was before it, ours the file now).
- ``rewind TURN|OP`` brings back the files as they were right after that point. By default only
  the files the agent changed since then, by taking back each of the agent's ops after it, newest
  first, the same way: the person's own edits stay. With ``every_file`` every file is made as it
  was then (what the person changed since is recorded first, as their own op, then overwritten).
- A conflict (the same lines changed since, a file now over the cap, a link, a file a filter
  owns, a file the line does not hold: ignored or excluded, so never recorded) refuses the whole
  command, changing nothing. The files written and the line's ref move
  together through the one writer: a failure puts the files back, a crash is finished (or rolled
  back) by the next gitspace command in the checkout.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core import lookup, userfiles
from ...core.identity import Identity
from ...core.linerefs import FOLLOW, turn_marks
from ...errors import Conflict, FileRefused, NotFound, PathRefused
from ...storage import ids, ledger, privateindex
from ...storage.files import State
from ...storage.objects import Entry
from ..naming import plain_name
from . import line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...storage.gitrepo import GitRepo
    from ..recorder import Recorder


@dataclass(frozen=True)
class Taken:
    """What an undo or a rewind did: its op, the files it wrote, and what it took back."""

    op: str | None  # None: nothing to change
    files: list[str]
    took_back: list[str]
    notes: tuple[str, ...] = ()  # what it left alone, and why


def latest_agent_op(repo: GitRepo) -> str:
    """The newest of the agent's ops on this checkout's line that is not taken back: an op an
    undo or a rewind took back counts as taken back unless a redo re-applied it since."""
    redone: set[str] = set()
    undone: set[str] = set()
    for _, op in line.walk(repo, line.where(repo).tip):
        if op.redo_of:
            redone.add(op.redo_of)
        elif op.op_id not in redone:
            undone |= set(op.undo_of)
        if op.source == "harness" and op.op_id not in undone:
            return op.op_id
    raise NotFound("The agent has no op on this checkout's line to take back.",
                   hint="'gitspace log' lists what is recorded here.")


def take_back(rec: Recorder) -> Taken:
    """The undo or rewind ``rec.event`` asks for, on the line ``rec`` has started."""
    repo, event = rec.repo, rec.event
    if event.kind == "undo":
        found = _op_commit(repo, str(event.extra["op"]))
        if not _on_the_line(rec, found[1]):
            raise Conflict(f"Op {found[0].op_id} is not on this checkout's line "
                           f"({here_of(rec).ref}): it was not recorded here, so there is nothing "
                           "of the agent's to take back. Nothing was changed.",
                           hint="'gitspace log' lists the ops of this checkout's line.")
        return _commit(rec, _reverse(rec, [found]), "undo", {"op": found[0].op_id},
                       f"undo {found[0].tool} {found[0].op_id[-8:]}", [found[0].op_id])
    target = _target(rec, str(event.extra["target"]))
    if event.extra.get("all"):
        return _rewind_all(rec, target)
    agents = _agent_ops_since(rec, target)
    return _commit(rec, _reverse(rec, agents), "rewind", {"to": target, "files": "agent"},
                   f"rewind to {target[:10]}", [op.op_id for op, _ in agents])


def _op_commit(repo: GitRepo, op_id: str) -> tuple[ledger.Op, str]:
    found = lookup.find_op(repo, op_id)
    if found is None or found.op is None:
        raise NotFound(f"There is no op {op_id} here.",
                       hint="'gitspace log' lists the ops of this checkout's line.")
    if found.op.tool == FOLLOW:
        raise Conflict(f"Op {op_id} only records that your checkout moved (a commit, a switch); "
                       "there is nothing of an agent's to take back.",
                       hint="Undo one of the agent's ops ('gitspace log' lists them).")
    return found.op, found.commit


def _reverse(rec: Recorder, ops: list[tuple[ledger.Op, str]]) -> dict[str, State]:
    """The work-tree states that take back ``ops`` (newest first), merged with what changed since
    each; Conflict when a file cannot be merged."""
    repo = rec.repo
    now: dict[str, State] = {}
    for _, commit in ops:
        c = repo.commit(commit)
        before = repo.commit(c.parents[0]).tree if c.parents else None
        for change in repo.diff_trees(before, c.tree):
            rel = change.path
            ours = now[rel] if rel in now else _disk(rec, rel)
            now[rel] = _merge(repo, rel, ours, change.new, change.old)
    return now


def _disk(rec: Recorder, rel: str) -> State:
    repo = rec.repo
    try:
        found = rec.files.read(rel, limit=rec.options.max_file_bytes)
    except (FileRefused, PathRefused) as e:
        raise Conflict(f"{rel} cannot be taken back: {e.message} Nothing was changed.",
                       hint="Move it away, or shrink it, then run the command again.") from None
    if found is not None and privateindex.filtered(repo, [rel]):
        raise Conflict(f"{rel} is a Git LFS file (a filter owns it), which gitspace never "
                       "writes. Nothing was changed.", hint="Take it back with git lfs.")
    return found


def _merge(repo: GitRepo, rel: str, ours: State, base: Entry | None,
           theirs: Entry | None) -> State:
    """Three-way: ``ours`` (the file now), from ``base`` (after the op) to ``theirs`` (before)."""
    mine = None if ours is None else Entry(ours[1], repo.hash_object("blob", ours[0]))
    if mine == base:
        return None if theirs is None else (repo.read_blob(theirs.sha), theirs.mode)
    if mine == theirs:
        return ours  # taken back already
    if ours is not None and base is not None and theirs is not None:
        merged = repo.merge_entry(Entry(ours[1], repo.write_blob(ours[0])), base, theirs)
        if merged is not None:
            return repo.read_blob(merged.sha), merged.mode
    raise Conflict(f"{rel} changed since in the same places, so it cannot be taken back there. "
                   "Nothing was changed.",
                   hint="Undo the later changes first, or edit the file by hand.")


def _target(rec: Recorder, text: str) -> str:
    """The commit on this checkout's line that ``text`` names: a turn (a number: of the latest
    session, or of the one ``--session`` names), a turn mark's name, or an op id (or part of
    one)."""
    repo = rec.repo
    marks = turn_marks(repo)
    session = rec.event.extra.get("session")
    if isinstance(session, str) and session:
        middle = f"-{plain_name(ids.session_body(session))}-turn-"
        marks = {name: tip for name, tip in marks.items() if middle in name}
        if not marks:
            raise NotFound(f"No turn of session {session} is recorded in this checkout.",
                           hint="'gitspace rewind' lists the turns there are, by session.")
    commit = marks.get(text)
    if commit is None and text.isdigit() and marks:
        latest = max(marks, key=lambda name: repo.commit(marks[name]).committer.rsplit(" ", 2)[1])
        prefix = latest[: latest.rindex("-turn-")]
        commit = next((tip for name, tip in marks.items()
                       if name == f"{prefix}-turn-{text}"), None)
    if commit is None:
        try:
            commit = lookup.resolve(repo, text).commit
        except NotFound:
            commit = None
    if commit is None:
        raise NotFound(f"{text!r} is no turn, turn mark or op of this checkout.",
                       hint="'gitspace rewind' lists the turns; 'gitspace log' the ops.")
    if not _on_the_line(rec, commit):
        raise Conflict(f"{text} is not on the line your checkout is on ({here_of(rec).ref}).",
                       hint="Switch back to the branch it was recorded on, or name a point of "
                            "this line.")
    return commit


def _agent_ops_since(rec: Recorder, target: str) -> list[tuple[ledger.Op, str]]:
    """The agent's ops after ``target`` on the line, newest first (already taken back: skipped)."""
    found, undone = [], set()
    for sha, op in line.walk(rec.repo, rec.parent):
        if sha == target:
            break
        undone |= set(op.undo_of)
        if op.source == "harness" and op.op_id not in undone:
            found.append((op, sha))
    return found


def _on_the_line(rec: Recorder, commit: str) -> bool:
    return any(sha == commit for sha, _ in line.walk(rec.repo, rec.parent))


def _rewind_all(rec: Recorder, target: str) -> Taken:
    repo = rec.repo
    goal = repo.commit(target).tree
    writes: dict[str, State] = {}
    for change in repo.diff_trees(rec.tree, goal):
        _disk(rec, change.path)  # (refuses what cannot be written)
        writes[change.path] = None if change.new is None else (
            repo.read_blob(change.new.sha), change.new.mode)
    return _commit(rec, writes, "rewind", {"to": target, "files": "all"},
                   f"rewind every file to {target[:10]}", [])


def _commit(rec: Recorder, writes: dict[str, State], tool: str, args: dict[str, object],
            subject_line: str, took_back: list[str], redo_of: str | None = None) -> Taken:
    """Record the op ``tool`` that writes ``writes`` and takes back the ops ``took_back`` (or,
    a redo, the undo ``redo_of``)."""
    repo = rec.repo
    # A file a sparse checkout leaves out of the work tree stays out (git's skip-worktree).
    outside_cone = privateindex.sparse(repo, [r for r in writes if rec.files.stat(r) is None])
    notes: tuple[str, ...] = ()
    if outside_cone:
        writes = {rel: s for rel, s in writes.items() if rel not in outside_cone}
        notes = (f"Not written: {len(outside_cone)} file(s) your sparse checkout leaves out "
                 f"({', '.join(sorted(outside_cone)[:5])}).",)
    pending = {rel: _disk(rec, rel) for rel in writes}
    # A file the line does not hold (ignored, excluded: never recorded) is the person's alone:
    # neither recorded as their change nor overwritten (core/userfiles.py).
    userfiles.refuse_over(repo, pending, {rel: repo.entry_at(rec.tree, rel) for rel in pending},
                          writes, moves=True, doing=tool)
    outside = {rel: None if s is None else Entry(s[1], repo.write_blob(s[0]))
               for rel, s in pending.items()}
    outside = {rel: e for rel, e in outside.items() if e != repo.entry_at(rec.tree, rel)}
    if outside:  # the person's changes to those files, recorded before they are overwritten
        rec.record_external(outside, f"Your changes found before {tool}.")
    writes = {rel: s for rel, s in writes.items() if s != pending[rel]}
    if not writes:
        return Taken(None, [], [], notes)
    entries = {rel: None if s is None else Entry(s[1], repo.write_blob(s[0]))
               for rel, s in writes.items()}
    undone = tuple(took_back)
    person, agent = rec.person()
    op = Identity(tool, agent=agent).op(args, undo_of=undone, redo_of=redo_of)
    body = (f"Run by {person.name} in their own checkout: only work-tree files changed, never "
            "the index or HEAD.")
    rec.record(op, entries, subject_line, body, person)
    rec.write_files(writes, pending)
    return Taken(op.op_id, sorted(writes), list(undone), notes)



def here_of(rec: Recorder) -> line.Where:
    """Where the person's checkout is: undo and rewind run only in place."""
    from .place import InPlace

    assert isinstance(rec.place, InPlace)
    return rec.place.here


# What another command on the line builds on (a redo: redo.py), by public names.
reverse = _reverse
commit_taken = _commit
