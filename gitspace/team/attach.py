"""Agents on an existing repository: one branch and one linked worktree per agent.

Invariants:
- The user's checkout is never written: attach, agents and detach read it with
  ``--no-optional-locks`` (so not even git's opportunistic index refresh happens) and write only
  the agent's branch, the agent's worktree and git's own worktree records. Index, HEAD, work
  tree, untracked and ignored files stay byte-for-byte the same. (``merge.py`` says what a merge
  into the branch the user has checked out may change.)
- Agent ``NAME`` works on the standard branch ``agent/NAME`` in the worktree
  ``<common git dir>/gitspace/worktrees/NAME``, or, with ``attach --at DIR``, in a linked
  worktree at DIR (for harnesses that refuse to edit under ``.git``, such as Claude Code), marked
  as the agent's by the file ``gitspace/agent`` in its own git dir (``owner.marked_agent``). DIR
  is refused when it is a symbolic link, inside any git directory, an existing folder that is
  not empty, inside an agent's worktree, or inside one of the user's work trees unless their
  ``.gitignore`` ignores it there (else the agent's files would show in their ``git status``).
  Inside ``.git`` the worktree is invisible to the
  user's ``git status`` and ``git clean``; it is an ordinary gitspace workspace, so
  ``gitspace -C PATH --agent NAME ...`` and ``gitspace.open(PATH, agent=NAME)`` work there. Every
  worktree has its own git dir, hence its own op lock and journal: agents on separate worktrees
  never wait for each other, while writers in one worktree (one branch) are serialised.
- ``attach`` starts a new branch at the commit the user's checkout has checked out (HEAD), never
  from their index or work tree: their uncommitted changes are not copied. Attaching a name whose
  branch already exists continues that branch; attaching an attached agent changes nothing
  (attaching it at another DIR is refused: detach it first).
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

No state of our own is kept: the agents are the worktrees under that folder, the marked linked
worktrees (the mark lives and dies with git's own record of the worktree, so ``git worktree
move``, ``remove`` and ``prune`` keep it right) plus the ``agent/*`` branches, so everything here
reads the same after a crash or in another clone. A crash between creating an ``--at`` worktree
and marking it leaves a worktree on ``agent/NAME``; attaching it at the same DIR marks it.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.owner import AGENT_MARK, is_agent_worktree, marked_agent, owns, worktrees_dir
from ..core.writer import COMMITTER, Change, RefMove, Writer
from ..errors import BadArguments, Conflict, GitCommandError, GitspaceError, LedgerError, NotFound
from ..storage import ledger, statefiles
from ..storage.gitrepo import GitRepo
from ..storage.worktrees import Worktree
from . import agent_worktrees, merge_journal

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
    return attached(repo).get(check_name(name))


def attached(repo: GitRepo, trees: list[Worktree] | None = None) -> dict[str, Worktree]:
    """Every attached agent's worktree, by agent name: the linked worktrees under
    ``worktrees_dir`` and the marked ones (``--at``), as ``git worktree list`` lists them (a
    worktree whose folder is gone is left out)."""
    trees = repo.worktrees() if trees is None else trees
    here = worktrees_dir(repo)
    marked = {path: name for name, path in _marked(repo).items()}
    found: dict[str, Worktree] = {}
    for tree in trees[1:]:  # the main checkout is never an agent's
        name = tree.path.name if tree.path.parent == here else marked.get(tree.path)
        if name is not None and not tree.prunable:
            found.setdefault(name, tree)
    return found


def _marked(repo: GitRepo) -> dict[str, Path]:
    """Agents attached ``--at`` a folder of their own: name -> worktree path, read from git's
    records of its worktrees (``<common git dir>/worktrees/ID``), never from the worktrees."""
    found: dict[str, Path] = {}
    for admin in sorted((repo.commondir / "worktrees").glob("*")):
        name = marked_agent(admin, repo.commondir)
        if name is None or not NAME.fullmatch(name):
            continue
        try:
            dotgit = Path((admin / "gitdir").read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError):
            continue
        found.setdefault(name, (admin / dotgit).parent if not dotgit.is_absolute()
                         else dotgit.parent)
    return found


def describe_holder(repo: GitRepo, path: Path) -> str:
    """Who a work tree belongs to, for messages: an agent's worktree or one of the user's."""
    for name, tree in attached(repo).items():
        if tree.path.resolve() == path.resolve():
            return f"agent {name}'s worktree ({path})"
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
        here, marked = worktrees_dir(repo), _marked(repo)
        if NAME.fullmatch(agent):
            for place in (here / agent, marked.get(agent)):
                if place is not None and (place / ".git").is_file():
                    return place
        attached = sorted({p.parent.name for p in here.glob("*/.git")} | set(marked))
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


def attach(path: str | os.PathLike[str], name: str,
           at: str | os.PathLike[str] | None = None) -> Attached:
    """Give agent ``name`` its own branch and worktree in the repository containing ``path``
    (the worktree at ``at`` when given, else inside the git directory)."""
    check_name(name)
    repo = open_user_repo(path)
    try:
        with merge_journal.locked(repo):  # a merge killed mid-way is undone first
            return _attach(repo, name, None if at is None else Path(os.path.abspath(at)))
    finally:
        repo.close()


def _attach(repo: GitRepo, name: str, at: Path | None) -> Attached:
    branch = BRANCH_PREFIX + name
    trees = repo.worktrees()
    user = user_checkout(repo, trees)  # ``repo`` is opened there
    current = attached(repo, trees).get(name)
    if at is not None and current is None:  # a crash right after creating it: mark it now
        real = at.parent.resolve() / at.name
        current = next((w for w in trees[1:] if w.branch == branch and not w.prunable
                        and w.path.resolve() == real and not at.is_symlink()), None)
        if current is not None:
            _mark(repo, current.path, name)
    if current is not None:
        if at is None or current.path.resolve() == at.parent.resolve() / at.name:
            return Attached(name, branch, current.path, current.head or "", 0, existed=True,
                            resumed=True)
        raise Conflict(f"Agent {name} is already attached, with its worktree at {current.path}.",
                       hint=f"Work there, or detach it first ('gitspace detach {name}') and "
                            "attach it again at the new folder. Nothing was changed.")
    target = worktrees_dir(repo) / name if at is None else _place(repo, at, trees)
    mine = next((w for w in trees if w.path == target), None)
    start = user.head if user.head and repo.has_object(user.head) else None
    if start is None:
        raise GitspaceError(
            f"{user.path} has no commits yet, so there is nothing for an agent to start from.",
            hint="Make a first commit (git commit), or start a new workspace with "
                 "'gitspace init DIR'.",
        )
    if mine is not None and mine.prunable:  # its folder was deleted by hand: drop git's record
        agent_worktrees.forget(repo, target)
    elif mine is not None or (at is None and target.exists()):  # (--at: _place checked it)
        raise GitspaceError(f"{target} exists but is not a registered worktree of an agent.",
                            hint="Look inside it, move it away, then attach again.")
    ref = f"refs/heads/{branch}"
    tip = repo.read_ref(ref)
    resumed = tip is not None
    if tip is None:
        Writer(repo).apply(Change(f"gitspace: attach {name}", COMMITTER,  # (the lock is held)
                                  [RefMove(ref, None, start)]))
        tip = start
    else:
        holder = next((w for w in trees if w.branch == branch and w.path != target), None)
        if holder is not None:
            raise Conflict(f"Branch {branch} is checked out in {describe_holder(repo, holder.path)}.",
                           hint="Switch that checkout to another branch, or pick another name.")
    if at is None:  # never through a link: the worktree lives inside the git directory
        statefiles.folder(repo.commondir, "gitspace", "worktrees")
        agent_worktrees.make(repo, target, branch)
    else:
        _add_at(repo, target, branch, name)
    return Attached(name, branch, target, tip, len(dirty_paths(repo)), existed=False,
                    resumed=resumed)


def _place(repo: GitRepo, at: Path, trees: list[Worktree]) -> Path:
    """Where an ``--at`` worktree may go (``at``, its parent folders resolved), or an error
    saying why not; nothing is created here."""
    keep = " Nothing was changed."
    if at.is_symlink():
        raise BadArguments(f"{at} is a symbolic link; gitspace does not put an agent's worktree "
                           "behind a link." + keep,
                           hint="Name a real folder, or one that does not exist yet.")
    target = at.parent.resolve() / at.name
    common = repo.commondir.resolve()
    if any(part.lower() == ".git" for part in target.parts) or _inside(target, common):
        raise BadArguments(
            f"{target} is inside a git directory; people and harnesses (Claude Code refuses to "
            "edit under .git) should not have to work there." + keep,
            hint="Name a folder outside the repository, such as one beside it; or leave out "
                 "--at for a worktree kept inside .git (fine for other harnesses).")
    agents = {tree.path.resolve() for tree in attached(repo, trees).values()}
    for tree in trees:
        top = tree.path.resolve()
        if tree.prunable or not _inside(target, top):
            continue
        if top in agents:
            raise Conflict(f"{target} is inside {describe_holder(repo, tree.path)}." + keep,
                           hint="Name a folder outside every worktree of the repository.")
        rel = target.relative_to(top).as_posix()
        ignored = tree.path.resolve() == repo.root.resolve() and target != top and repo.run_git(
            "--no-optional-locks", "check-ignore", "-q", "--", rel).returncode == 0
        if not ignored:
            raise BadArguments(
                f"{target} is inside your work tree {top}: the agent's files would show in "
                "your 'git status' (and 'git add -A' would take them)." + keep,
                hint="Name a folder outside the repository (such as one beside it), or one your "
                     ".gitignore ignores (add it there first).")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise Conflict(f"{target} exists and is not an empty folder." + keep,
                       hint="Name a new folder (attach makes it) or an empty one.")
    return target


def _add_at(repo: GitRepo, target: Path, branch: str, name: str) -> None:
    """Check ``branch`` out at ``target`` for agent ``name``, never through a link put there
    (``agent_worktrees.make``), and mark it the agent's."""
    target.parent.mkdir(parents=True, exist_ok=True)
    agent_worktrees.make(repo, target, branch)
    try:
        _mark(repo, target, name)
    except BaseException:
        try:  # just made, holds nothing of anyone's
            agent_worktrees.remove(repo, target, force=True)
        except GitspaceError:
            pass
        raise


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _mark(repo: GitRepo, worktree: Path, name: str) -> None:
    """Write the mark that makes the linked worktree at ``worktree`` agent ``name``'s, into its
    own git dir (found through git's records, not through the worktree)."""
    for admin in (repo.commondir / "worktrees").glob("*"):
        try:
            dotgit = Path((admin / "gitdir").read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError):
            continue
        if (admin / dotgit if not dotgit.is_absolute() else dotgit) == worktree / ".git":
            statefiles.write(admin, f"gitspace/{AGENT_MARK}", (name + "\n").encode())
            return
    raise GitspaceError(f"git keeps no record of the worktree {worktree}, so it cannot be "
                        f"marked as agent {name}'s.", hint="Run 'git worktree list' to see why.")


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
        places = {name: tree.path for name, tree in attached(repo, trees).items()}
        found = []
        for ref, tip, _ in repo.refs(f"refs/heads/{BRANCH_PREFIX.rstrip('/')}"):
            name = ref[len("refs/heads/" + BRANCH_PREFIX):]
            ops = _ops(repo, tip, user.head)
            last = ops[0] if ops else None
            found.append(Agent(name, BRANCH_PREFIX + name, places.get(name), tip, len(ops),
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
        with open_ws(found.path) as ws, ws.writer.locked():  # no op of the agent mid-flight
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
                agent_worktrees.remove(repo, found.path, force=force)
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
    # A link there is history's, not gitspace's: removed with the worktree, never followed.
    if os.path.islink(local) or not local.is_dir() or not any(local.iterdir()):
        return None
    parent = statefiles.folder(repo.commondir, "gitspace", "detached")
    archive = Path(tempfile.mkdtemp(prefix=f"{name}-{time.strftime('%Y%m%dT%H%M%S')}-",
                                    dir=parent))
    os.replace(local, archive)  # onto the new, empty folder: one rename
    return archive
