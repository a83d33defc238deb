"""Merging an agent's branch back: a normal two-parent merge commit, or nothing at all.

Semantics (``gitspace merge NAME [--into BRANCH]``):
- The merge is computed from commits alone (``git merge-tree --write-tree``): no index, no work
  tree and no ``MERGE_HEAD`` are involved, so a conflicting merge is refused before anything is
  written and changes nothing anywhere.
- The result is always a merge commit (first parent: the target, second: ``agent/NAME``), as
  ``git merge --no-ff`` makes: the agent's work arrives as one unit that ``git revert -m 1``
  takes back, and the target's first-parent history stays its own. An agent branch with nothing
  new is "already up to date".
- The target defaults to the branch the user's checkout is on. A target checked out nowhere
  moves by compare-and-swap only: the user's checkout stays byte-for-byte the same. A target
  checked out in the user's checkout is updated the way ``git merge`` would update it and no
  further: only the paths the merge changes are written (``git read-tree -m -u``, which honours
  filters and never overwrites local changes), and the merge is refused, changing nothing, when
  any of those paths has staged or unstaged changes or an untracked or ignored file in the way.
  Their other index entries, untracked and ignored files, and HEAD itself stay byte-for-byte the
  same. A target checked out in an agent's worktree is refused (that agent owns its files).
- The merge commit's author is the user's configured git identity (``human`` when there is
  none); the committer is gitspace. It is not an op: it carries no Gitspace trailer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import branches
from .attach import BRANCH_PREFIX, check_name, dirty_paths, open_user_repo, user_checkout
from .errors import ConcurrentUpdate, Conflict, GitspaceError, NotFound
from .gitrepo import GitCommandError, GitRepo, Identity
from .transaction import COMMITTER


@dataclass(frozen=True)
class Merged:
    name: str
    branch: str
    target: str
    commit: str | None  # None: already up to date
    files: list[str]
    checkout: bool  # the target is checked out in the user's checkout, which was updated


def merge(path: str | os.PathLike[str], name: str, into: str | None = None) -> Merged:
    repo = open_user_repo(path)
    try:
        return _merge(repo, check_name(name), into)
    finally:
        repo.close()


def _merge(repo: GitRepo, name: str, into: str | None) -> Merged:
    branch = BRANCH_PREFIX + name
    theirs = repo.read_ref(f"refs/heads/{branch}")
    if theirs is None:
        raise NotFound(f"There is no agent {name} (no branch {branch}).",
                       hint="'gitspace agents' lists the agents of this repository.")
    user = user_checkout(repo)
    target = into or user.branch
    if target is None:
        raise GitspaceError("Your checkout is on a detached HEAD, so there is no branch to merge "
                            "into.", hint="Name one with --into BRANCH.")
    branches.check_name(target)
    ours = repo.read_ref(f"refs/heads/{target}")
    if ours is None:
        raise NotFound(f"There is no branch {target!r} to merge into.",
                       hint=f"Create it first (git branch {target}), or pick another with --into.")
    holder = next((w for w in repo.worktrees() if w.branch == target), None)
    checkout = holder is not None and holder.path == user.path
    if holder is not None and not checkout:
        raise Conflict(f"{target} is checked out in {holder.path}, which gitspace does not own.",
                       hint="Merge into a branch that is checked out nowhere, or in your own "
                            "checkout.")
    if repo.is_ancestor(theirs, ours):
        return Merged(name, branch, target, None, [], checkout)
    tree, conflicts = repo.merge_tree(ours, theirs)
    if conflicts:
        raise Conflict(
            f"Merging {branch} into {target} conflicts in " + ", ".join(conflicts[:10])
            + (" ..." if len(conflicts) > 10 else "") + ". Nothing was changed.",
            hint=f"Resolve it by hand: 'git merge {branch}' in a checkout of {target} stops at "
                 "the conflicts for you to fix.",
        )
    files = [c.path for c in repo.diff_trees(repo.commit(ours).tree, tree)]
    message = (f"Merge branch '{branch}' into {target}\n\n"
               f"Work of agent {name}, merged by gitspace.\n")
    commit = repo.write_commit(tree, [ours, theirs], message, _author(repo), COMMITTER)
    if checkout:
        _update_checkout(repo, target, ours, commit, files, f"gitspace: merge {branch}")
    else:
        repo.cas_ref(f"refs/heads/{target}", ours, commit, COMMITTER, f"gitspace: merge {branch}")
    return Merged(name, branch, target, commit, files, checkout)


def _update_checkout(
    repo: GitRepo, target: str, ours: str, commit: str, files: list[str], reflog: str
) -> None:
    """Bring the user's checkout from ``ours`` to ``commit``, touching only ``files``."""
    busy = sorted({p for i in range(0, len(files), 200)
                   for p in dirty_paths(repo, *files[i:i + 200], ignored=True)})
    if busy:
        raise Conflict(
            f"Merging into {target} would change files you have changed or that are in the way "
            "in your checkout: " + ", ".join(busy[:10]) + (" ..." if len(busy) > 10 else "")
            + ". Nothing was changed.",
            hint="Commit or stash them first, or merge into another branch with --into BRANCH.",
        )
    try:
        repo.git("read-tree", "-m", "-u", ours, commit)
    except GitCommandError as e:
        raise Conflict(f"Your checkout cannot take the merge: {e}. Nothing was changed.",
                       hint="Commit or stash your changes, or merge with --into BRANCH.") from None
    try:
        repo.cas_ref(f"refs/heads/{target}", ours, commit, COMMITTER, reflog)
    except ConcurrentUpdate:
        repo.git("read-tree", "-m", "-u", commit, ours)  # put the checkout back as it was
        raise


def _author(repo: GitRepo) -> Identity:
    name = repo.git("config", "--get", "user.name", check=False).decode().strip()
    email = repo.git("config", "--get", "user.email", check=False).decode().strip()
    return Identity(name, email) if name and email else Identity("human", "human@gitspace")
