"""What every view reads the workspace through: the repository, its refs and its shell.

Invariant: read-only. The view opens a ``GitRepo`` (never a ``Workspace``: opening one finishes a
crashed op, which writes) and reads refs and objects through ``git --no-optional-locks`` processes
(``GitRepo.read_git``) or plain file reads, so requests can run in parallel threads and never take
a lock an op needs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ..core import checkpoints, linerefs, timeline
from ..errors import NotFound
from ..storage.gitrepo import GitRepo

ALL = "*"  # the branch value meaning "every branch"


@dataclass
class Context:
    repo: GitRepo
    root: Path
    counts: timeline.Counts = field(default_factory=timeline.Counts)
    _in_place: bool | None = None

    def branch(self) -> str | None:
        return self.repo.head_branch()

    def in_place(self) -> bool:
        """Is this a person's own checkout whose agent calls are recorded in place (lines under
        ``refs/gitspace/``, core/linerefs.py)? Their ops are read from the lines then."""
        if self._in_place is None:
            from ..core import owner

            self._in_place = linerefs.in_place(self.repo) and not owner.owns(self.repo)
        return self._in_place

    def line_ref(self, branch: str | None) -> str | None:
        """The line recorded in place for ``branch`` (None: the current one), if there is one."""
        if not self.in_place():
            return None
        ref = linerefs.ref_for(branch or self.branch(), self.repo.gitdir)
        return ref if self.repo.read_ref(ref) is not None else None

    def also(self, branch: str | None) -> tuple[str, ...]:
        """What a view of ``branch`` reads beside ``rev``: in place, the branch itself (the
        person's commits join the line's ops in one list)."""
        if branch in (None, "") and self.line_ref(None) is not None:
            return ("HEAD",)
        return ()

    def branches(self) -> list[str]:
        return [ref[len("refs/heads/"):] for ref, _, _ in self.repo.refs("refs/heads/")]

    def rev(self, branch: str | None) -> str | None:
        """The ref a view of ``branch`` reads: the current branch by default, None for every
        branch (``ALL``)."""
        if branch == ALL:
            return None
        recorded = self.line_ref(None) if not branch else None
        if recorded is not None:
            return recorded  # in place: the line's ops (``also`` adds the person's commits)
        name = branch or self.branch()
        if name is None:
            return "HEAD"
        if self.repo.read_ref(f"refs/heads/{name}") is None:
            if branch is None:
                return "HEAD"  # an unborn branch: the views show an empty history
            raise NotFound(f"There is no branch {name!r} here.",
                           hint="Branches: " + (", ".join(self.branches()) or "none") + ".")
        return f"refs/heads/{name}"

    def checkpoints(self) -> dict[str, str]:
        """Checkpoint name -> the commit it marks."""
        prefix = checkpoints.PREFIX
        return {ref[len(prefix):]: commit for ref, _, commit in self.repo.refs(prefix.rstrip("/"))}

    def turn_marks(self) -> dict[str, list[str]]:
        """Commit -> the turns marked there, as people name them (``s-84836b81 turn 2``): in a
        person's own checkout, where they are refs of gitspace's own, not checkpoints."""
        if not self.in_place():
            return {}
        from ..harness import turns

        found: dict[str, list[str]] = {}
        for t in turns.in_place_marks(self.repo):
            found.setdefault(t.commit, []).append(t.name)
        return found

    def tips(self) -> dict[str, list[str]]:
        """Commit -> the branches whose tip it is."""
        found: dict[str, list[str]] = {}
        for ref, _, commit in self.repo.refs("refs/heads/"):
            found.setdefault(commit, []).append(ref[len("refs/heads/"):])
        for ref, commit in linerefs.lines(self.repo):  # kept work: never drawn as abandoned
            name = linerefs.branch_of(ref)
            found.setdefault(commit, []).append(f"{name} (recorded)" if name else "detached "
                                                "(recorded)")
        return found

    def state(self) -> str:
        """A short token that changes whenever a branch, a tag or HEAD moves (live updates)."""
        out = self.repo.read_git("for-each-ref", "--format=%(refname) %(objectname)",
                                 "refs/heads/", "refs/tags/", linerefs.ROOT, check=False)
        return hashlib.sha1(f"{self.branch()}\n".encode() + out).hexdigest()[:16]

    def shell(self, active: str = "", live: str | None = None) -> dict[str, object]:
        """The page shell's arguments; a live page records the state it is drawn at."""
        return {"root": self.root, "branch": self.branch(), "active": active, "live": live,
                "state": self.state() if live else None}

    @classmethod
    def open(cls, path: Path) -> Context:
        if not path.is_dir():
            raise NotFound(f"{path} is not a folder.", hint="Pass the folder of a workspace.")
        repo = GitRepo.open(path)
        return cls(repo, repo.root)
