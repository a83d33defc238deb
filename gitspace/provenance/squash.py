"""The note of a squash commit: gitspace's own (``gitspace merge --squash``) and one a host made
when it squash-merged a pull request (the CI action: ``gitspace notes attach COMMIT``).

Invariants:
- A squash commit's lines are attributed from the commits it joined, oldest first, each by its
  note or, being an op, by its call (``attribute.note_for`` with them as ``made_from``); every
  record of theirs is kept. A line none of them holds is not attested: the squash's author did
  not necessarily write it.
- Which commits a host squashed, when nothing says: the remote branch whose merge with the
  squash's parent gives exactly the squash's tree (the pull request's branch, usually still
  there when the push lands); else the noted commits no ancestor of the squash that its message
  names by subject (GitHub's and GitLab's default squash messages list them). None found: no
  note, and nothing is guessed.
"""

from __future__ import annotations

from ..core import person as persons
from ..core.writer import Writer
from ..errors import GitspaceError, LockTimeout
from ..storage.gitrepo import GitRepo
from . import attribute, authorship
from .notes import Notes, put

CANDIDATES = 500  # remote branches and noted commits looked at, at most


def note_squash(writer: Writer, commit: str, joined: list[str]) -> bool:
    """Write the note of squash ``commit`` from the commits it ``joined`` (oldest first; the
    caller holds the writer's lock). True when a note was written."""
    repo = writer.repo
    notes = Notes(repo)
    note = attribute.note_for(repo, commit, attribute.Context(made_from=joined, notes=notes,
                                                              unheld_is_person=False))
    if note is None:
        return False
    put(writer, persons.person(repo), {commit: authorship.dump(note)},
        f"authorship of squash {commit[:10]}")
    return True


def commits_between(repo: GitRepo, base: str, tip: str) -> list[str]:
    """The commits ``tip`` has and ``base`` has not, oldest first (merges left out)."""
    out = repo.git("rev-list", "--reverse", "--no-merges", f"--max-count={CANDIDATES * 20}",
                   f"{base}..{tip}", "--")
    return out.decode().split()


def squashed_by_host(repo: GitRepo, commit: str) -> list[str]:
    """The commits a host's squash ``commit`` joined, oldest first ([] when nothing says)."""
    squash = repo.commit(commit)
    if len(squash.parents) != 1:
        return []
    parent = squash.parents[0]
    for ref, tip, _ in repo.refs("refs/remotes")[:CANDIDATES]:
        if tip in (commit, parent) or ref.endswith("/HEAD") or repo.is_ancestor(tip, commit):
            continue
        try:
            tree, conflicts = repo.merge_tree(parent, tip)
        except GitspaceError:
            continue
        if not conflicts and tree == squash.tree:
            base = repo.git("merge-base", parent, tip, check=False).decode().strip()
            return commits_between(repo, base, tip) if base else []
    return _named(repo, commit, squash.message)


def _named(repo: GitRepo, commit: str, message: str) -> list[str]:
    subjects = {line.strip().lstrip("*-").strip() for line in message.splitlines()[1:]}
    subjects.discard("")
    found = []
    for sha in list(Notes(repo).commits())[:CANDIDATES * 20]:
        if not repo.has_object(sha) or repo.is_ancestor(sha, commit):
            continue
        noted = repo.commit(sha)
        if noted.message.split("\n", 1)[0].strip() in subjects:
            found.append((noted.time, sha))
    return [sha for _, sha in sorted(found)]


def attach(repo: GitRepo, commit: str) -> list[str]:
    """``gitspace notes attach COMMIT``: the note of a host's squash commit, from the notes of the
    commits it joined; those commits ([] when none were found, or it has a note already)."""
    if Notes(repo).get(commit) is not None:
        return []
    joined = squashed_by_host(repo, commit)
    if not joined:
        return []
    writer = Writer(repo)
    busy = LockTimeout("A gitspace hook held this checkout's lock for 30 s.",
                       hint="Run the command again when the agent is idle.")
    with writer.locked(30.0, busy):
        return joined if note_squash(writer, commit, joined) else []
