"""Replay onto another base: a rebase by meaning, written to a new branch or not at all.

Invariant: the ops of ``base..tip`` are re-run, oldest first, on top of ``onto`` in a scratch
workspace; only when every one applied are the new objects copied into the user's repository and
the new branch created (by compare-and-swap: an existing branch is never moved). A stop leaves the
user's repository exactly as it was.

Because ops are re-run from their arguments, a ``str_replace`` still applies where a text patch
would conflict: only the text it names has to be there, once. Each op keeps its op id, agent,
session and trailers; the tree is whatever it produces on the new base, so trees are not compared,
but the trailers are (as in ``replay``), and so is a ``Gitspace-Script`` against the script in the
new tree: an op that ran other code is not the same op.

Commits that cannot be re-run (outside edits, commits that are not ops, merges, missing elided
arguments) are moved by their diff instead: each path they change is merged three ways (what the
commit's parent had, what it recorded, what the new base has); a conflict stops the replay.

Stops ("no longer applies"): a tool that fails on the new base, an op or outside edit that would
change nothing there (its change is already present: pass ``base`` past it), a merge conflict, a
changed script. ``base`` defaults to the merge base of ``tip`` and ``onto``, like ``git rebase``.
"""

from __future__ import annotations

from . import branches, ledger
from .errors import GitspaceError
from .gitrepo import EXEC_MODE, FILE_MODE, Commit, Entry, GitRepo
from .replay import BadRange, Progress, Report, branch_commits, checkpoint_tags, run
from .replay_op import Divergence, diverged
from .scratch import Scratch, create_branch, open_scratch
from .workspace import Workspace


def replay_onto(ws: Workspace, tip: str, onto: str, branch: str, base: str | None = None,
                progress: Progress | None = None) -> Report:
    """Re-run the ops of ``base..tip`` on ``onto``; create ``branch`` there if all applied."""
    branches.check_name(branch)
    if ws.repo.read_ref(f"refs/heads/{branch}") is not None:
        raise GitspaceError(f"A branch named {branch!r} already exists; nothing was changed.",
                            hint="Pick another name for the new branch.")
    if base is None:
        base = merge_base(ws.repo, tip, onto)
    commits, _ = branch_commits(ws.repo, tip, base)
    report = Report(tip, base, len(commits), onto=onto, branch=branch)
    with open_scratch(ws.repo, onto) as sc:
        now, later = checkpoint_tags(ws.repo, commits, {base: onto})
        sc.set_tags(now)
        run(sc, commits, report, later, apply_diff, compare=False, progress=progress)
        if report.ok:
            sc.export()
            create_branch(ws, branch, sc.tip())
            report.created = sc.tip()
    return report


def merge_base(repo: GitRepo, tip: str, onto: str) -> str:
    found = repo.git("merge-base", tip, onto, check=False).decode().split()
    if not found:
        raise BadRange(f"{tip[:12]} and {onto[:12]} have no common history, so there is no base "
                       "to replay from.", hint="Pass --from with the commit the ops start after.")
    return found[0]


def apply_diff(sc: Scratch, commit: Commit, op: ledger.Op | None) -> Divergence | None:
    """Apply the change ``commit`` records to the scratch tip, merging each path three ways."""
    repo = sc.repo
    parent = repo.commit(commit.parents[0]).tree if commit.parents else None
    current = sc.tree()
    updates: dict[str, Entry | None] = {}
    for change in repo.diff_trees(parent, commit.tree):
        ours = repo.entry_at(current, change.path)
        if ours == change.new:
            continue
        if ours == change.old:
            updates[change.path] = change.new
            continue
        merged = _merge(repo, ours, change.old, change.new)
        if merged is None:
            return diverged(sc, commit, op, f"its change to {change.path} conflicts with what the "
                            "new base has there.")
        updates[change.path] = merged
    if not updates:
        return diverged(sc, commit, op, "it would change nothing on the new base: its change is "
                        "already there.")
    sc.commit_tree(repo.update_tree(current, updates), commit)
    return None


def _merge(repo: GitRepo, ours: Entry | None, base: Entry | None,
           theirs: Entry | None) -> Entry | None:
    """A three-way merge of one file's content, or None when it conflicts or is not a file."""
    if ours is None or base is None or theirs is None or any(
            e.is_tree or e.mode not in (FILE_MODE, EXEC_MODE) for e in (ours, base, theirs)):
        return None
    merged = repo.merge_blobs(repo.read_blob(ours.sha), repo.read_blob(base.sha),
                              repo.read_blob(theirs.sha))
    if merged is None:
        return None
    mode = theirs.mode if ours.mode == base.mode else ours.mode
    return Entry(mode, repo.write_blob(merged))
