"""Merging an agent's branch back: a normal two-parent merge commit, or nothing at all.

Semantics (``gitspace merge NAME [--into BRANCH]``):
- The merge is computed from commits alone (``git merge-tree --write-tree``): no index, no work
  tree and no ``MERGE_HEAD`` are involved, so a conflicting merge is refused before anything is
  written and changes nothing anywhere.
- The result is always a merge commit (first parent: the target, second: ``agent/NAME``), as
  ``git merge --no-ff`` makes: the agent's work arrives as one unit that ``git revert -m 1``
  takes back, and the target's first-parent history stays its own. An agent branch with nothing
  new is "already up to date".
- The target defaults to the branch the user's checkout is on (the work tree the command runs
  in: their main checkout or one of their own linked worktrees). A target checked out nowhere
  moves by compare-and-swap only: the user's checkout stays byte-for-byte the same. A target
  checked out in the user's checkout is updated the way ``git merge`` would update it and no
  further: only the paths the merge changes are written (``git read-tree -m -u``, which honours
  filters and never overwrites local changes), and the merge is refused, changing nothing, when
  any of those paths has staged or unstaged changes or an untracked or ignored file in the way.
  Their other index entries, untracked and ignored files, and HEAD itself stay byte-for-byte the
  same. The branch's ref lock is held from before that check until the branch has moved, so
  files and branch move together: any failure or interrupt before the branch moves puts those
  paths and their index entries back. A target checked out in an agent's worktree (that agent
  owns its files) or in another of the user's worktrees (run the merge there) is refused.
- The merge commit's author is the user's configured git identity (``human`` when there is
  none); the committer is gitspace. It is not an op: it carries no Gitspace trailer.
- ``--squash``: the same tree as one commit on the target alone (one parent), its message listing
  the agent's ops: the target's history gets one commit, not one per tool call. Its authorship
  note (refs/notes/ai) says which op wrote each of its lines (``provenance/squash.py``).
- gitspace's own hook entries never come along: in every JSON file the merge changes, the hook
  entries that run ``gitspace hook`` (the agent's worktree had them committed, with an absolute
  path to gitspace) are taken out, and a file left as the target had it, or with nothing of its
  own, is the target's (absent when it had none). The agent's other settings changes stay.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from ..core import branches
from ..core.writer import COMMITTER, Change, RefMove, Writer
from ..errors import Conflict, GitCommandError, GitspaceError, NotFound
from ..harness.hookentries import without_gitspace_hooks
from ..provenance.squash import commits_between, note_squash
from ..storage import bounds
from ..storage.gitrepo import GitRepo
from ..storage.objects import Entry, Signature
from . import merge_journal
from .attach import (
    BRANCH_PREFIX,
    check_name,
    describe_holder,
    dirty_paths,
    open_user_repo,
    user_checkout,
)
from .merge_journal import MergeJournal


@dataclass(frozen=True)
class Merged:
    name: str
    branch: str
    target: str
    commit: str | None  # None: already up to date
    files: list[str]
    checkout: bool  # the target is checked out in the user's checkout, which was updated
    squashed: bool = False  # one commit with one parent, not a merge commit


def merge(path: str | os.PathLike[str], name: str, into: str | None = None,
          squash: bool = False) -> Merged:
    repo = open_user_repo(path)
    try:
        with merge_journal.locked(repo) as journal:
            return _merge(repo, journal, check_name(name), into, squash)
    finally:
        repo.close()


def repair(path: str | os.PathLike[str]) -> bool:
    """Undo what a merge into the checkout containing ``path`` left when it was killed (every
    merge and attach does this first); True if there was something to undo."""
    repo = open_user_repo(path)
    try:
        with merge_journal.locked(repo) as journal:
            return journal.recovered
    finally:
        repo.close()


def _merge(repo: GitRepo, journal: MergeJournal, name: str, into: str | None,
           squash: bool = False) -> Merged:
    branch = BRANCH_PREFIX + name
    theirs = repo.read_ref(f"refs/heads/{branch}")
    if theirs is None:
        raise NotFound(f"There is no agent {name} (no branch {branch}).",
                       hint="'gitspace agents' lists the agents of this repository.")
    trees = repo.worktrees()
    user = user_checkout(repo, trees)
    target = into or user.branch
    if target is None:
        raise GitspaceError("Your checkout is on a detached HEAD, so there is no branch to merge "
                            "into.", hint="Name one with --into BRANCH.")
    branches.check_name(target)
    ours = repo.read_ref(f"refs/heads/{target}")
    if ours is None:
        raise NotFound(f"There is no branch {target!r} to merge into.",
                       hint=f"Create it first (git branch {target}), or pick another with --into.")
    holder = next((w for w in trees if w.branch == target), None)
    checkout = holder is not None and holder.path.resolve() == user.path.resolve()
    if holder is not None and not checkout:
        where = describe_holder(repo, holder.path)
        if where.startswith("agent"):
            raise Conflict(f"{target} is checked out in {where}: that agent's files are its own.",
                           hint="Merge into a branch that is checked out nowhere, or into yours "
                                "(--into BRANCH).")
        raise Conflict(f"{target} is checked out in {where}, not in the checkout you ran this "
                       "from.",
                       hint=f"Run it there ('gitspace -C {holder.path} merge {name}'), or merge "
                            "into a branch that is checked out nowhere (--into BRANCH).")
    if repo.is_ancestor(theirs, ours):
        return Merged(name, branch, target, None, [], checkout)
    try:
        tree, conflicts = repo.merge_tree(ours, theirs)
    except GitCommandError as e:
        if "unrelated histories" not in e.message:
            raise
        raise Conflict(f"{branch} and {target} share no history, so there is no common base to "
                       "merge from. Nothing was changed.",
                       hint=f"Merge into the branch {branch} started from (--into BRANCH), or "
                            f"join them by hand: 'git merge --allow-unrelated-histories {branch}'."
                       ) from None
    if conflicts:
        raise Conflict(
            f"Merging {branch} into {target} conflicts in " + ", ".join(conflicts[:10])
            + (" ..." if len(conflicts) > 10 else "") + ". Nothing was changed.",
            hint=f"Resolve it by hand: 'git merge {branch}' in a checkout of {target} stops at "
                 "the conflicts for you to fix.",
        )
    tree = _without_hook_settings(repo, repo.commit(ours).tree, tree)
    files = [c.path for c in repo.diff_trees(repo.commit(ours).tree, tree)]
    if not files and squash:
        return Merged(name, branch, target, None, [], checkout)
    if squash:
        message = _squash_message(repo, branch, target, name, ours, theirs)
        parents = [ours]
    else:
        message = (f"Merge branch '{branch}' into {target}\n\n"
                   f"Work of agent {name}, merged by gitspace.\n")
        parents = [ours, theirs]
    commit = repo.write_commit(tree, parents, message, _author(repo), COMMITTER)
    ref, reflog = f"refs/heads/{target}", f"gitspace: merge {branch}"
    if checkout:
        journal.begin(ref, ours, commit, files, checkout)  # before any lock: see merge_journal
        _update_checkout(repo, journal, ref, ours, commit, files, reflog)
    else:  # a ref move alone, through the checkout's writer (whose lock ``merge`` holds)
        Writer(repo).apply(Change(reflog, COMMITTER, [RefMove(ref, ours, commit)]))
    if squash:  # the squash commit says which op wrote each line (refs/notes/ai)
        note_squash(Writer(repo), commit, commits_between(repo, ours, theirs))
    return Merged(name, branch, target, commit, files, checkout, squash)


def _update_checkout(repo: GitRepo, journal: MergeJournal, ref: str, ours: str, commit: str,
                     files: list[str], reflog: str) -> None:
    """Bring the user's checkout from ``ours`` to ``commit``, touching only ``files``.

    The branch's ref lock is taken (and the branch verified to be at ``ours``) before anything is
    looked at or written, so nobody moves the branch between the files and the ref; the files and
    index entries go back as they were if anything at all fails before the ref moves (and, after
    a crash, on the next merge: see merge_journal).
    """
    with repo.lock_ref(ref, ours) as update:
        try:
            _refuse_busy(repo, ref, files)
            journal.save_index()
            # Those files are clean (same content), but their stat data in the index may be old
            # (a put-back rewrote them, an editor touched them): read-tree -m would then refuse
            # them as "not uptodate". Re-stat just them; read-tree rewrites their entries anyway.
            ours_tree = repo.commit(ours).tree
            tracked = [p for p in files if (e := repo.entry_at(ours_tree, p)) and not e.is_tree]
            for i in range(0, len(tracked), 200):
                repo.git("update-index", "-q", "--", *tracked[i:i + 200])
            try:
                repo.git("read-tree", "-m", "-u", ours, commit)
            except GitCommandError as e:
                raise Conflict(f"Your checkout cannot take the merge: {e}. Nothing was changed.",
                               hint="Commit or stash your changes, or merge with --into BRANCH.") \
                    from None
            update.set(commit, COMMITTER, reflog)
        except BaseException:
            if not update.done:
                journal.put_back(ours, commit, files)  # if this fails, the next merge retries
            raise
        finally:
            if update.done:
                journal.end()


def _refuse_busy(repo: GitRepo, ref: str, files: list[str]) -> None:
    """Conflict, changing nothing, when a path the merge writes has changes of the user's or an
    untracked or ignored file in the way."""
    busy = sorted({p for i in range(0, len(files), 200)
                   for p in dirty_paths(repo, *files[i:i + 200], ignored=True)})
    if busy:
        target = ref.removeprefix("refs/heads/")
        raise Conflict(
            f"Merging into {target} would change files you have changed or that are in the "
            "way in your checkout: " + ", ".join(busy[:10]) + (" ..." if len(busy) > 10 else "")
            + ". Nothing was changed.",
            hint="Commit or stash them first, or merge into another branch with --into BRANCH.",
        )


def _without_hook_settings(repo: GitRepo, ours: str, merged: str) -> str:
    """``merged`` with gitspace's hook entries taken out of every JSON file the merge changes
    (see the module docstring)."""
    changes: dict[str, Entry | None] = {}
    for change in repo.diff_trees(ours, merged):
        if change.new is None or not change.path.endswith(".json") or change.new.is_tree:
            continue
        try:
            data = bounds.loads(repo.read_blob(change.new.sha), change.path)
        except (ValueError, UnicodeDecodeError, GitspaceError):
            continue
        kept, removed = without_gitspace_hooks(data)
        if not removed:
            continue
        before: Any = None
        if change.old is not None:
            try:
                before = bounds.loads(repo.read_blob(change.old.sha), change.path)
            except (ValueError, UnicodeDecodeError, GitspaceError):
                before = None
        if kept == before or (change.old is None and kept == {}):
            changes[change.path] = change.old  # the target's file, or none
        else:
            text = json.dumps(kept, indent=2, ensure_ascii=False) + "\n"
            changes[change.path] = Entry(change.new.mode, repo.write_blob(text.encode()))
    return repo.update_tree(merged, changes) if changes else merged


def _squash_message(repo: GitRepo, branch: str, target: str, name: str, ours: str,
                    theirs: str) -> str:
    subjects = []
    for commit in repo.log(f"{ours}..{theirs}", limit=201):
        subjects.append("- " + commit.message.split("\n", 1)[0][:100])
    more = "\n- ..." if len(subjects) > 200 else ""
    return (f"Squashed work of agent {name} ({branch}) into {target}\n\n"
            f"Merged by gitspace as one commit. The agent's ops, newest first (each is still on "
            f"{branch}):\n" + "\n".join(subjects[:200]) + more + "\n")


def _author(repo: GitRepo) -> Signature:
    name = repo.git("config", "--get", "user.name", check=False).decode().strip()
    email = repo.git("config", "--get", "user.email", check=False).decode().strip()
    return Signature(name, email) if name and email else Signature("human", "human@gitspace")
