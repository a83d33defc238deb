"""Notes that travel: merging another clone's ``refs/notes/ai`` into this one's, without loss.

Invariants:
- The remote's notes are read with ``ls-remote`` and fetched as objects only (``--refmap=``, no
  FETCH_HEAD): the one ref that moves here is ``refs/notes/ai``, through the writer (``notes``).
- Merging keeps every note of both sides. A commit noted on one side only keeps that note; one
  noted on both keeps the union of what they attest (where both name a line, ours), and every
  record of both. A note of theirs that does not parse never replaces a note of ours; one of
  ours that does not parse is kept as it is. The merge commit has both tips as parents, so the
  next push of ours is a fast-forward there.
- ``prepare_push`` (the pre-push hook) asks the remote only when the notes changed since they
  last went there (``<git dir>/gitspace/provenance/pushed/``), and never fails a push.
"""

from __future__ import annotations

import hashlib

from ..core import person as persons
from ..core.writer import Change, RefMove, Writer
from ..errors import GitspaceError, LockTimeout
from ..storage import statefiles
from ..storage.gitrepo import GitRepo
from ..storage.objects import FILE_MODE, Entry
from . import authorship
from .notes import REF, Notes

PUSHED = "gitspace/provenance/pushed"


class NotesUnavailable(GitspaceError):
    """The remote's notes could not be read or fetched."""


def remote_tip(repo: GitRepo, remote: str) -> str | None:
    proc = repo.run_git("ls-remote", "--", remote, REF)
    if proc.returncode != 0:
        raise NotesUnavailable(f"Could not read {remote}'s notes: "
                                f"{proc.stderr.decode(errors='replace').strip()}",
                                hint="Check the remote ('git remote -v') and your access to it.")
    for row in proc.stdout.decode(errors="replace").splitlines():
        sha, _, ref = row.partition("\t")
        if ref == REF and len(sha) == 40:
            return sha
    return None


def fetch(repo: GitRepo, remote: str, sha: str) -> None:
    """Bring the objects of the remote's notes (at ``sha``) here; no ref moves."""
    if repo.has_object(sha):
        return
    proc = repo.run_git("-c", "gc.auto=0", "-c", "maintenance.auto=false", "fetch", "--quiet",
                        "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
                        "--refmap=", remote, REF)
    if proc.returncode != 0 or not repo.has_object(sha):
        raise NotesUnavailable(f"Could not fetch {remote}'s notes: "
                                f"{proc.stderr.decode(errors='replace').strip()}",
                                hint="Check the remote and try again; nothing was changed.")


def merge_in(writer: Writer, theirs: str) -> str | None:
    """Merge notes commit ``theirs`` into ``refs/notes/ai`` (the caller holds the lock): the new
    tip, or the old one when ours already holds theirs."""
    repo = writer.repo
    ours = repo.read_ref(REF)
    if ours == theirs or ours is not None and repo.is_ancestor(theirs, ours):
        return ours
    person = persons.person(repo)
    if ours is None or repo.is_ancestor(ours, theirs):
        new = theirs  # a fast-forward
    else:
        tree = merged_tree(repo, ours, theirs)
        message = "Merge the authorship notes of another clone\n\nWritten by gitspace.\n"
        new = repo.write_commit(tree, [ours, theirs], message, person, person)
    writer.apply(Change("gitspace: merge notes", person, [RefMove(REF, ours, new)]))
    return new


def merged_tree(repo: GitRepo, ours: str, theirs: str) -> str:
    mine, other = Notes(repo, tip=ours), Notes(repo, tip=theirs)
    have, incoming = mine.commits(), other.commits()
    changes: dict[str, Entry | None] = {}
    for commit, blob in incoming.items():
        if have.get(commit) == blob:
            continue
        found = mine.location(commit)
        path = found[0] if found else commit
        if commit not in have:
            changes[path] = Entry(FILE_MODE, blob)
            continue
        a, b = mine.get(commit), other.get(commit)
        if a is not None and b is not None:
            text = authorship.dump(merge_notes(a, b))
            changes[path] = Entry(FILE_MODE, repo.write_blob(text.encode()))
        elif a is None and commit in mine.refused and b is not None:
            continue  # ours is no note gitspace reads: kept as it is
    tree = mine.tree
    return repo.update_tree(tree, changes) if changes else tree or repo.write_tree({})


def merge_notes(a: authorship.Note, b: authorship.Note) -> authorship.Note:
    """Both notes of one commit as one: ``a``'s claims win where both name a line."""
    out = authorship.Note(a.base or b.base, {p: dict(e) for p, e in a.files.items()},
                          {**b.sessions, **a.sessions}, {**b.humans, **a.humans},
                          {**b.prompts, **a.prompts}, {**b.traces, **a.traces},
                          {**b.other, **a.other})
    for path, entries in b.files.items():
        claimed = authorship.union([], [r for rs in out.files.get(path, {}).values()
                                         for r in rs])
        target = out.files.setdefault(path, {})
        for key, ranges in entries.items():
            free = _minus(ranges, claimed)
            if free:
                target[key] = authorship.union(target.get(key, []), free)
    return out


def _minus(ranges: authorship.Ranges, taken: authorship.Ranges) -> authorship.Ranges:
    out: authorship.Ranges = []
    for a, b in ranges:
        start = a
        for x, y in taken:
            if y < start or x > b:
                continue
            if x > start:
                out.append((start, x - 1))
            start = max(start, y + 1)
        if start <= b:
            out.append((start, b))
    return out


def pull(repo: GitRepo, remote: str, writer: Writer | None = None) -> str | None:
    """Fetch ``remote``'s notes and merge them into ours; the notes tip (None: neither side has
    any). ``writer``: the checkout's, its lock held by the caller."""
    theirs = remote_tip(repo, remote)
    if theirs is None:
        return repo.read_ref(REF)
    fetch(repo, remote, theirs)
    if writer is not None:
        return merge_in(writer, theirs)
    own = Writer(repo)
    busy = LockTimeout("A gitspace hook held this checkout's lock for 30 s.",
                       hint="Run the command again when the agent is idle.")
    with own.locked(30.0, busy):
        return merge_in(own, theirs)


def prepare_push(repo: GitRepo, remote: str) -> bool:
    """Should ``refs/notes/ai`` go to ``remote`` with this push? When they changed since they
    last went: the remote's notes merged into ours first, so the push is a fast-forward."""
    tip = repo.read_ref(REF)
    if tip is None:
        return False
    mark = f"{PUSHED}/{hashlib.sha1(remote.encode()).hexdigest()}"
    try:
        if statefiles.read(repo.gitdir, mark) == tip.encode():
            return False
    except GitspaceError:
        pass
    theirs = remote_tip(repo, remote)
    if theirs == tip:
        statefiles.write(repo.gitdir, mark, tip.encode())
        return False
    if theirs is not None:
        pull(repo, remote)
    return True


def to_push(repo: GitRepo, remote: str) -> str | None:
    """``gitspace push`` and ``sync``: the notes tip to push to ``remote`` once its notes are
    merged into ours (None: there are none here, or it has them all). No notes here: no
    question asked of the remote."""
    if repo.read_ref(REF) is None:
        return None
    theirs = remote_tip(repo, remote)
    tip = repo.read_ref(REF) if theirs is None else pull(repo, remote)
    return tip if tip is not None and tip != theirs else None
