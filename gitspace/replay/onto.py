"""Replay onto another base: a rebase by meaning, written to a new branch or not at all.

Invariant: the ops of ``base..tip`` are re-run, oldest first, on top of ``onto`` in a scratch
workspace; only when every one applied are the new objects copied into the user's repository and
the new branch created (by compare-and-swap: an existing branch is never moved). A stop leaves the
user's repository exactly as it was. A created branch replays clean: ``replay(ws, branch, onto)``
re-runs its ops to the same commits, because its tool ops are what the tools wrote there, its
other commits keep their messages and authors, and checkpoints are seen as they are in both.

Because ops are re-run from their arguments, a ``str_replace`` still applies where a text patch
would conflict: only the text it names has to be there, once. Each op keeps its op id, agent,
session and trailers; the tree is whatever it produces on the new base, so trees and messages are
not compared, but the trailers and the author are (as in ``replay``), and so is a
``Gitspace-Script`` against the script in the new tree: an op that ran other code is not the same
op.

Commits that cannot be re-run (outside edits, transcripts, commits that are not ops, merges) are
moved by their diff instead: each path they change is merged three ways (what the commit's
parent had, what it recorded, what the new base has); a conflict stops the replay.

Stops ("no longer applies"): a tool that fails on the new base; an op or outside edit that would
change nothing there, or (an op) part of whose change is already there, since it would then record
a path it does not change; a merge conflict; a changed script; a restore of a checkpoint at a
commit being moved or at the commit the ops start after: that tag stays where it is, so on the
new branch the restore would bring back the old state, not what it brought back here. ``base``
defaults to the merge base of ``tip`` and ``onto``, like ``git rebase``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.checkpoints import PREFIX
from ..core.workspace import Workspace
from ..errors import LedgerError, PathRefused
from ..storage import ledger
from ..storage.gitrepo import GitRepo
from ..storage.objects import Commit, Entry
from ..tools.registry import Tool, all_tools
from .engine import BadRange, Progress, ReplayReport, branch_commits, checkpoint_tags, run
from .judge import Divergence, diverged
from .scratch import Scratch, check_new_branch, create_branch, open_scratch


def replay_onto(ws: Workspace, tip: str, onto: str, branch: str, base: str | None = None,
                progress: Progress | None = None) -> ReplayReport:
    """Re-run the ops of ``base..tip`` on ``onto``; create ``branch`` there if all applied."""
    check_new_branch(ws.repo, branch)
    if base is None:
        base = merge_base(ws.repo, tip, onto)
    commits, start = branch_commits(ws.repo, tip, base)
    report = ReplayReport(tip, base, len(commits), start=start, onto=onto, branch=branch)
    stop = restore_left_behind(ws.repo, all_tools(ws), commits, start)
    with open_scratch(ws.repo, onto, ws.max_file_bytes, ops=len(commits)) as sc:
        sc.set_tags(checkpoint_tags(ws.repo, [])[0])  # as they are, as a replay of the result sees them
        run(sc, commits[:stop[0]] if stop else commits, report, {}, apply_diff, compare=False,
            progress=progress)
        if report.ok and stop is not None:
            at = commits[stop[0]]
            report.divergence = diverged(sc, at, ledger.parse_message(at.message), stop[1])
        if report.ok:
            sc.export()
            create_branch(ws, branch, sc.tip())
            report.created = sc.tip()
    report.leftover = None if sc.leftover is None else str(sc.leftover)
    return report


def merge_base(repo: GitRepo, tip: str, onto: str) -> str:
    found = repo.git("merge-base", tip, onto, check=False).decode().split()
    if not found:
        raise BadRange(f"{tip[:12]} and {onto[:12]} have no common history, so there is no base "
                       "to replay from.", hint="Pass --onto a revision that shares history with "
                       "the branch, or --from the commit its ops start after.", option="--onto")
    return found[0]


def restore_left_behind(repo: GitRepo, tools: Mapping[str, Tool], commits: list[Commit],
                        start: str) -> tuple[int, str] | None:
    """The first op reading a checkpoint at one of ``commits`` or at ``start`` (a restore: its
    index and why it stops), or None: such a tag does not move with the branch."""
    moving = {c.sha for c in commits} | {start}
    tags = {ref[len(PREFIX):]: peeled for ref, _, peeled in repo.refs(PREFIX.rstrip("/"))}
    for i, commit in enumerate(commits):
        try:
            op = ledger.parse_message(commit.message)
        except LedgerError:
            return None  # the replay stops there first
        tool = tools.get(op.tool) if op is not None and op.source == "tool" else None
        if op is None or tool is None or tool.restores_checkpoint is None:
            continue
        name = op.args.get(tool.restores_checkpoint)
        at = tags.get(name) if isinstance(name, str) else None
        if at is None or at not in moving:
            continue
        where = "the commit the ops start after" if at == start else "a commit this replay moves"
        return i, (f"it restores checkpoint {name!r}, which is at {where} ({at[:12]}); the "
                   "checkpoint stays there, so on the new base this restore would bring back "
                   "the old state, not what it brought back here. Replay only the ops before it "
                   f"(tip {commit.sha[:12]}~1), then checkpoint the new branch and restore "
                   "from there.")
    return None


def apply_diff(sc: Scratch, commit: Commit, op: ledger.Op | None) -> Divergence | None:
    """Apply the change ``commit`` records to the scratch tip, merging each path three ways."""
    repo = sc.repo
    parent = repo.parent_tree(commit)
    current = sc.tree()
    updates: dict[str, Entry | None] = {}
    for change in repo.diff_trees(parent, commit.tree):
        ours = repo.entry_at(current, change.path)
        if ours == change.new and op is not None:
            return diverged(sc, commit, op, f"its change to {change.path} is already on the new "
                            "base, so moved there it would record a path it does not change.")
        if ours == change.new:
            continue
        if ours == change.old:
            updates[change.path] = change.new
            continue
        merged = repo.merge_entry(ours, change.old, change.new)
        if merged is None:
            return diverged(sc, commit, op, f"its change to {change.path} conflicts with what the "
                            "new base has there.")
        updates[change.path] = merged
    if not updates:
        return diverged(sc, commit, op, "it would change nothing on the new base: its change is "
                        "already there.")
    try:
        sc.commit_tree(repo.update_tree(current, updates), commit)
    except PathRefused as e:  # a path no work tree can hold ("..", ".git"): nothing was written
        return diverged(sc, commit, op, e.message)
    return None
