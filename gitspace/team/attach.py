"""Agents on an existing repository: one branch and one linked worktree per agent.

Invariants:
- The user's checkout is never written: attach, agents and detach read it with
  ``--no-optional-locks`` (so not even git's opportunistic index refresh happens) and write only
  the agent's branch, the agent's worktree and git's own worktree records. Index, HEAD, work
  tree, untracked and ignored files stay byte-for-byte the same. (``merge.py`` says what a merge
  into the branch the user has checked out may change.)
- Agent ``NAME`` works on the standard branch ``agent/NAME`` in the worktree
  ``<common git dir>/gitspace/worktrees/NAME``. Inside ``.git`` the worktree is invisible to the
  user's ``git status`` and ``git clean``; it is an ordinary gitspace workspace, so
  ``gitspace -C PATH --agent NAME ...`` and ``gitspace.open(PATH, agent=NAME)`` work there. Every
  worktree has its own git dir, hence its own op lock and journal: agents on separate worktrees
  never wait for each other, while writers in one worktree (one branch) are serialised.
- ``attach`` starts a new branch at the commit the user's checkout has checked out (HEAD), never
  from their index or work tree: their uncommitted changes are not copied. Attaching a name whose
  branch already exists continues that branch; attaching an attached agent changes nothing.
- The user's checkout is the work tree a command starts in (their main checkout or one of their
  own linked worktrees), or the main checkout when it starts in an agent's worktree.
- ``route`` sends a command given ``--agent NAME`` to agent NAME's worktree when NAME is
  attached, and refuses (NotFound: attach it first) when NAME is not and the checkout is not a
  gitspace workspace without agents, so ``gitspace -C REPO --agent NAME call ...`` never writes
  into the user's checkout. From inside an agent's worktree nothing is rerouted. Which checkouts
  gitspace owns, and so may write, is ``owner.py``'s one test.
- ``detach`` removes the worktree and keeps the branch. It refuses while the worktree holds
  changes no op recorded, as ``git status`` counts them (``gitspace snapshot`` records them),
  unless forced; ignored files go with the worktree, as with ``git worktree remove``, and are
  listed. The agent's local session files (``.gitspace/``) are first moved to a new folder under
  ``<common git dir>/gitspace/detached/``, and moved back if the worktree cannot be removed.

No state of our own is kept: the agents are the worktrees under that folder plus the
``agent/*`` branches, so everything here reads the same after a crash or in another clone.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.owner import is_agent_worktree, owns, worktrees_dir
from ..core.transaction import COMMITTER, private_folder
from ..errors import BadArguments, Conflict, GitspaceError, LedgerError, NotFound
from ..storage import ledger
from ..storage.gitrepo import GitCommandError, GitRepo, Worktree
from . import merge_journal

BRANCH_PREFIX = "agent/"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Attached:
    name: str
    branch: str
    path: Path
    start: str  # the commit the branch started at (or its tip, when it already existed)
    dirty: int  # uncommitted paths in the user's checkout that the agent does not see
    existed: bool  # the agent was already attached: nothing was done
    resumed: bool  # the branch already existed (an earlier attach): the agent continues it


@dataclass(frozen=True)
class Agent:
    name: str
    branch: str
    path: Path | None  # None: detached (the branch is kept, no worktree)
    tip: str
    ops: int  # ops on the agent's branch that the user's checked-out commit does not contain
    last: ledger.Op | None
    last_time: int | None


@dataclass(frozen=True)
class Detached:
    name: str
    branch: str
    path: Path
    tip: str
    discarded: list[str]  # unrecorded changes thrown away (only with force)
    sessions: Path | None  # where the agent's session files were moved
    ignored: list[str] = field(default_factory=list)  # ignored files deleted with the worktree


def check_name(name: str) -> str:
    if not NAME.fullmatch(name) or ".." in name or name.endswith((".lock", ".")):
        raise BadArguments(
            f"{name!r} is not a valid agent name.",
            hint="Use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit.",
        )
    return name


def user_checkout(repo: GitRepo, trees: list[Worktree] | None = None) -> Worktree:
    """The user's checkout: the work tree ``repo`` is opened at (their main checkout or one of
    their own linked worktrees), or the main checkout when ``repo`` is an agent's worktree.
    ``trees`` is ``repo.worktrees()`` when the caller already has it (one git call, not two)."""
    trees = repo.worktrees() if trees is None else trees
    if not is_agent_worktree(repo):
        here = repo.root.resolve()
        found = next((w for w in trees if w.path.resolve() == here), None)
        if found is not None:
            return found
    return trees[0]


def open_user_repo(path: str | os.PathLike[str]) -> GitRepo:
    """The repository containing ``path``, opened at the user's checkout (see ``user_checkout``)."""
    repo = GitRepo.open(Path(path))
    if not is_agent_worktree(repo):
        return repo
    main = user_checkout(repo).path
    repo.close()
    return GitRepo.open(main)


def find(repo: GitRepo, name: str) -> Worktree | None:
    """The worktree agent ``name`` is attached in, or None."""
    path = worktrees_dir(repo) / check_name(name)
    return next((w for w in repo.worktrees() if w.path == path and not w.prunable), None)


def describe_holder(repo: GitRepo, path: Path) -> str:
    """Who a work tree belongs to, for messages: an agent's worktree or one of the user's."""
    if path.resolve().parent == worktrees_dir(repo).resolve():
        return f"agent {path.name}'s worktree ({path})"
    return f"another of your worktrees ({path})"


def route(path: str | os.PathLike[str], agent: str | None) -> Path:
    """Where a command for ``agent`` started at ``path`` runs.

    Inside an agent's worktree: there. Elsewhere in a repository where ``agent`` is attached: its
    worktree. Otherwise ``path`` itself, but only when that checkout is a gitspace workspace with
    no agents attached; anywhere else NotFound says to attach the agent first, so ``--agent NAME``
    never lands in the user's own checkout.
    """
    given = Path(path)
    if not agent or not given.is_dir():
        return given
    repo = GitRepo.open(given)
    try:
        if is_agent_worktree(repo):
            return given
        here = worktrees_dir(repo)
        if NAME.fullmatch(agent) and (here / agent / ".git").is_file():
            return here / agent
        attached = sorted(p.parent.name for p in here.glob("*/.git"))
        if attached or not owns(repo):
            raise NotFound(
                f"Agent {agent} is not attached to the repository at {repo.root}, so it has no "
                "worktree of its own there; gitspace does not run it in your checkout.",
                hint=f"Run 'gitspace -C {repo.root} attach --agent {agent}' first"
                     + (f" (attached now: {', '.join(attached)})." if attached else "."),
            )
        return given
    finally:
        repo.close()


def attach(path: str | os.PathLike[str], name: str) -> Attached:
    """Give agent ``name`` its own branch and worktree in the repository containing ``path``."""
    check_name(name)
    repo = open_user_repo(path)
    try:
        with merge_journal.locked(repo):  # a merge killed mid-way is undone first
            return _attach(repo, name)
    finally:
        repo.close()


def _attach(repo: GitRepo, name: str) -> Attached:
    branch = BRANCH_PREFIX + name
    target = worktrees_dir(repo) / name
    trees = repo.worktrees()
    user = user_checkout(repo, trees)  # ``repo`` is opened there
    mine = next((w for w in trees if w.path == target), None)
    if mine is not None and not mine.prunable:
        return Attached(name, branch, target, mine.head or "", 0, existed=True, resumed=True)
    start = user.head if user.head and repo.has_object(user.head) else None
    if start is None:
        raise GitspaceError(
            f"{user.path} has no commits yet, so there is nothing for an agent to start from.",
            hint="Make a first commit (git commit), or start a new workspace with "
                 "'gitspace init DIR'.",
        )
    if mine is not None:  # its folder was deleted by hand: drop git's record of it
        repo.forget_worktree(target)
    elif target.exists():
        raise GitspaceError(f"{target} exists but is not a registered worktree.",
                            hint="Look inside it, move it away, then attach again.")
    ref = f"refs/heads/{branch}"
    tip = repo.read_ref(ref)
    resumed = tip is not None
    if tip is None:
        repo.cas_ref(ref, None, start, COMMITTER, f"gitspace: attach {name}")
        tip = start
    else:
        holder = next((w for w in trees if w.branch == branch and w.path != target), None)
        if holder is not None:
            raise Conflict(f"Branch {branch} is checked out in {describe_holder(repo, holder.path)}.",
                           hint="Switch that checkout to another branch, or pick another name.")
    # Never through a link: an agent's worktree lives inside the git directory, nowhere else.
    private_folder(private_folder(repo.commondir, "gitspace"), "worktrees")
    repo.add_worktree(target, branch)
    return Attached(name, branch, target, tip, len(dirty_paths(repo)), existed=False,
                    resumed=resumed)


def dirty_paths(repo: GitRepo, *pathspecs: str, ignored: bool = False) -> list[str]:
    """Uncommitted paths in ``repo``'s work tree (ignored ones too with ``ignored``), read with
    ``--no-optional-locks`` so that git does not even refresh the index file."""
    args = ["--no-optional-locks", "status", "--porcelain=v1", "-z", "--no-renames",
            "--untracked-files=all" if ignored else "--untracked-files=normal",
            "--ignored=matching" if ignored else "--ignored=no", "--ignore-submodules=all"]
    if pathspecs:
        args += ["--", *(f":(literal){p}" for p in pathspecs)]
    out = repo.git(*args)
    return [os.fsdecode(r[3:]) for r in out.split(b"\0") if len(r) > 3]


def agents(path: str | os.PathLike[str]) -> list[Agent]:
    """Every agent of the repository: attached ones (with a worktree) and detached branches."""
    repo = GitRepo.open(Path(path))
    try:
        trees = repo.worktrees()
        user = user_checkout(repo, trees)
        attached = {w.path.name: w.path for w in trees
                    if w.path.parent == worktrees_dir(repo) and not w.prunable}
        found = []
        for ref, tip, _ in repo.refs(f"refs/heads/{BRANCH_PREFIX.rstrip('/')}"):
            name = ref[len("refs/heads/" + BRANCH_PREFIX):]
            ops = _ops(repo, tip, user.head)
            last = ops[0] if ops else None
            found.append(Agent(name, BRANCH_PREFIX + name, attached.get(name), tip, len(ops),
                               last[0] if last else None, last[1] if last else None))
        return found
    finally:
        repo.close()


def _ops(repo: GitRepo, tip: str, exclude: str | None) -> list[tuple[ledger.Op, int]]:
    """The ops on ``tip`` that ``exclude`` does not contain, newest first, with their times."""
    rev = f"{exclude}..{tip}" if exclude and repo.has_object(exclude) else tip
    found = []
    for commit in repo.log(rev):
        try:
            op = ledger.parse_message(commit.message)
        except LedgerError:
            continue
        if op is not None:
            found.append((op, commit.time))
    return found


def detach(path: str | os.PathLike[str], name: str, force: bool = False) -> Detached:
    """Remove agent ``name``'s worktree; its branch stays."""
    from ..api import open as open_ws

    check_name(name)
    repo = GitRepo.open(Path(path))
    try:
        found = find(repo, name)
        branch = BRANCH_PREFIX + name
        if found is None:
            has_branch = repo.read_ref(f"refs/heads/{branch}") is not None
            raise NotFound(
                f"Agent {name} is not attached" + (f"; its branch {branch} is kept." if has_branch
                                                   else "."),
                hint="'gitspace agents' lists the agents of this repository.",
            )
        with open_ws(found.path) as ws, ws.transactions.lock():  # no op of the agent mid-flight
            ws.transactions.recover_locked()
            unrecorded, ignored = _leftovers(ws.repo)
            if unrecorded and not force:
                raise Conflict(
                    f"Agent {name}'s worktree has changes no op recorded: {_some(unrecorded)}."
                    + (f" Removing it would also delete these ignored files: {_some(ignored)}."
                       if ignored else ""),
                    hint=f"Record them first with 'gitspace -C {found.path} snapshot' (or move "
                         "them away), or pass --force to throw them away. Nothing was changed.",
                )
            tip = ws.tip()
            sessions = _archive_sessions(repo, name, found.path)
            try:
                repo.remove_worktree(found.path, force=force)
            except GitCommandError as e:
                if sessions is not None:
                    os.replace(sessions, found.path / ".gitspace")
                raise GitspaceError(
                    f"Could not remove agent {name}'s worktree {found.path}: {e.message} "
                    "Its session files are back in place; nothing was removed.",
                    hint="Close programs using files in it (or unlock it: 'git worktree unlock "
                         f"{found.path}'), then detach again.",
                ) from None
        return Detached(name, branch, found.path, tip, unrecorded, sessions, ignored)
    finally:
        repo.close()


def _leftovers(repo: GitRepo) -> tuple[list[str], list[str]]:
    """What removing the worktree would lose, as ``git status`` sees it: unrecorded changes
    (modified, deleted and untracked paths, untracked folders such as a nested repository) and
    ignored files, except gitspace's own ``.gitspace/`` (archived, not lost)."""
    out = repo.git("--no-optional-locks", "status", "--porcelain=v1", "-z", "--no-renames",
                   "--untracked-files=normal", "--ignored=traditional", "--ignore-submodules=none")
    unrecorded: list[str] = []
    ignored: list[str] = []
    for record in out.split(b"\0"):
        if len(record) <= 3:
            continue
        rel = os.fsdecode(record[3:])
        if rel == ".gitspace/" or rel.startswith(".gitspace/"):
            continue
        (ignored if record[:2] == b"!!" else unrecorded).append(rel)
    return sorted(unrecorded), sorted(ignored)


def _some(paths: list[str]) -> str:
    return ", ".join(paths[:10]) + (f" and {len(paths) - 10} more" if len(paths) > 10 else "")


def _archive_sessions(repo: GitRepo, name: str, worktree: Path) -> Path | None:
    """Move the worktree's local, ignored gitspace files (session transcripts) to safety, into a
    folder of their own (a fresh, uniquely named one: two detaches never share it)."""
    local = worktree / ".gitspace"
    if not local.is_dir() or not any(local.iterdir()):
        return None
    parent = private_folder(private_folder(repo.commondir, "gitspace"), "detached")
    archive = Path(tempfile.mkdtemp(prefix=f"{name}-{time.strftime('%Y%m%dT%H%M%S')}-",
                                    dir=parent))
    os.replace(local, archive)  # onto the new, empty folder: one rename
    return archive
