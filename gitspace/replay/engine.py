"""Replay: re-run a branch's recorded ops from their arguments and check each rebuilds its commit.

Invariant: replay only reads the user's repository. It works in a scratch workspace (see
``scratch``) that starts at the base and re-runs each op with its recorded tool and arguments; the
op id, agent, session and tool-use id are inputs copied from the recorded op (the agent decides
the author). The first op whose outcome differs from its commit stops it, and the report says
which op, why, which paths and a short diff. ``onto.replay_onto`` is the one variant that writes:
a new branch, and only when every op applied.

Replay runs code from the history it checks: a mutating constraint script in the workspace's
``constraints/`` folder is run as it was in the tree at its op, with the privileges of whoever
runs the replay. Only replay branches you would run code from, or pass ``scripts=False``
(``--no-scripts``): such ops are then not run and counted as ``unverified`` (a success with
unverified ops is still a success; the report says how many). gitspace's built-in scripts run.

What is replayed: the first-parent commits of ``tip`` that ``base`` (``--from``) does not
contain, oldest first, starting from the first parent of the oldest of them; with ``base`` on
the branch, that is the commits after it. Without ``base``, everything after the root commit,
which is taken as it is (there is nothing before it to run it on).

Each commit is re-executed, applied as recorded (its tree taken as it is, after checks), or a
divergence without running anything:
- a merge commit must be git's own merge of its two parents (``git merge-tree``), else it is
  "an evil merge" (a conflict resolved by hand counts); a merge carrying op trailers diverges;
- a commit that is not an op (no trailer block) is applied as recorded;
- an op of source ``external`` must change exactly the paths its arguments record (``count`` and
  the first 100 ``paths``); one of source ``harness`` (a tool call of another harness: Claude
  Code's ``Write``, ``Bash``...) must change exactly the paths its ``Gitspace-Paths`` records,
  and when it is a file edit ``harness_ops`` knows (Claude Code's Write, Edit and MultiEdit, and
  the other harnesses' file tools) it is re-done from its recorded input with that harness's
  rules, and counts as re-executed; a shell command is taken as recorded; one of source
  ``transcript`` only ``transcripts/<session>.json`` it names; all three must be authored as
  gitspace authors them; ``init`` is acceptable only on a commit without parents (the root
  commit, which is never checked);
- a tool op is re-executed. An argument elided to ``{"$blob": sha, "bytes": n}`` is expanded from
  the object store first (the tool elides it again identically); a blob that is missing, or of
  another size, is a divergence: the op cannot be checked.

A re-executed op diverges when, re-run on the replayed state:
- it ran a constraint script (``Gitspace-Script``) whose blob differs from the script it would run
  now: the file in the tree at that op for a workspace script, the installed one for a built-in
  ("the script changed since the op"); it is not run then;
- the tool fails, changes nothing (a recorded op always changed something), or leaves the branch;
- the tree after it differs from the recorded commit's tree (a hand edit under a forged trailer, a
  tool whose behaviour changed, reordered or dropped ops: each shows at the first op it affects);
- the trailers the tool writes differ from the recorded ones (tool, args, source, agent, session,
  tool-use id, undo/redo links, script): a forged ``Gitspace-Undo-Of`` is caught even when the
  files agree;
- the author's name and email differ from those the tool commits with (times are ignored);
- the full message differs, byte for byte, from the one the tool writes (subject, body, recorded
  result, trailers): a forged subject or an added ``Approved-by:`` line is caught.
A malformed trailer block diverges too: nothing in it can be trusted.

What a clone lacks never passes for a match: a range reaching where a shallow clone's history
was cut is refused (``depth``); a checkpoint a restore needs is fetched from a remote, or the
replay is refused with the fix (``reach``); and a replay that re-executed no op of a branch
that has ops (tool or harness calls) fails (``ReplayReport.empty``) unless ``allow_empty``.

Checkpoints: tags ``gitspace/*`` at commits outside ``base..tip`` are copied into the scratch
repository as they are; a tag at a commit inside the range appears there only when the replay
reaches that commit, pointing at the replayed commit. So a restore can use only a checkpoint that
existed at that point of the branch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import progress as reporting
from ..core import checkpoints, depth
from ..core.workspace import Workspace
from ..errors import LedgerError, NotFound, PathRefused
from ..storage import ledger, opchain
from ..storage.gitrepo import GitRepo
from ..storage.objects import Commit
from ..tools import builtins
from . import harness_ops, reach
from .judge import (
    Divergence,
    diverged,
    judge,
    reexecute,
    script_for,
    unrun_script_problem,
    workspace_script,
)
from .scratch import Scratch, open_scratch

Progress = Callable[[int, int], None]


class BadRange(NotFound):
    """The revisions given do not delimit a sequence of ops (a usage error for the CLI, which
    names ``option`` as the one to fix)."""

    def __init__(self, message: str, hint: str | None = None, option: str = "--from") -> None:
        super().__init__(message, hint)
        self.option = option


@dataclass
class ReplayReport:
    """What a replay did: counts over the commits of ``base..tip`` and the first divergence.
    ``start`` is the commit the replay started from; ``unverified`` counts the script ops not run
    (``scripts`` off); ``leftover`` names a scratch folder that could not be removed."""

    tip: str
    base: str | None
    total: int
    start: str | None = None
    reexecuted: int = 0
    as_recorded: int = 0
    recorded_why: dict[str, int] = field(default_factory=dict)
    unverified: int = 0
    scripts: bool = True
    divergence: Divergence | None = None
    empty: str | None = None  # why a replay that re-executed nothing fails (see ``replay``)
    fetched: list[str] = field(default_factory=list)  # checkpoints fetched from a remote
    onto: str | None = None
    branch: str | None = None
    created: str | None = None
    leftover: str | None = None

    @property
    def ok(self) -> bool:
        return self.divergence is None and self.empty is None

    @property
    def checked(self) -> int:
        return self.reexecuted + self.as_recorded + self.unverified

    @property
    def result(self) -> str:
        if self.onto is None:
            return "diverged" if self.divergence else "empty" if self.empty else "match"
        return "created" if self.ok else "stopped"

    def record(self, why: str) -> None:
        self.as_recorded += 1
        self.recorded_why[why] = self.recorded_why.get(why, 0) + 1

    def as_json(self) -> dict[str, Any]:
        data = {k: v for k, v in dataclasses.asdict(self).items() if k != "divergence"}
        data.update(ok=self.ok, result=self.result, checked=self.checked,
                    divergence=None if self.divergence is None else
                    dataclasses.asdict(self.divergence))
        return data


def replay(ws: Workspace, tip: str, base: str | None = None,
           progress: Progress | None = None, *, scripts: bool = True,
           allow_empty: bool = False) -> ReplayReport:
    """Re-run the ops of ``base..tip`` (commits) and compare each with the recorded commit;
    ``scripts=False`` leaves workspace scripts unrun (see the module docstring). A replay that
    re-executed no op of a branch that has some fails (``ReplayReport.empty``) unless ``allow_empty``."""
    commits, start = branch_commits(ws.repo, tip, base)
    ledger.require_known((c.message for c in commits), "replay")
    report = ReplayReport(tip, base, len(commits) + (base is None), start=start, scripts=scripts)
    if base is None:
        report.record("root commit")
    now, later = checkpoint_tags(ws.repo, commits)
    found = reach.missing_checkpoints(ws.repo, restored_checkpoints(ws, commits), now, later)
    report.fetched = sorted(ref.removeprefix(checkpoints.PREFIX) for ref in found)
    with open_scratch(ws.repo, start, ws.max_file_bytes, ops=len(commits)) as sc:
        for ref, obj in found.items():
            peeled = ws.repo.git("rev-parse", f"{obj}^{{commit}}").decode().strip()
            if peeled in later or peeled in {c.sha for c in commits}:
                later.setdefault(peeled, []).append(ref)
            else:
                now[ref] = obj
        sc.set_tags(now)
        run(sc, commits, report, later, _take_recorded_tree, compare=True, progress=progress)
    report.leftover = None if sc.leftover is None else str(sc.leftover)
    if report.ok and not report.reexecuted and not allow_empty and has_ops(ws.repo, tip):
        report.empty = (f"it re-executed no op: the {len(commits)} commit(s) after "
                        f"{start[:12]} hold no op it could re-run ({report.as_recorded} applied "
                        "as recorded), though the branch has ops.")
    return report


def has_ops(repo: GitRepo, tip: str) -> bool:
    """Does ``tip``'s history hold an op replay can re-run (a tool call, a harness call)?"""
    return bool(repo.log(tip, limit=1, first_parent=False,
                         grep=r"^Gitspace-Source: (tool|harness)$"))


def restored_checkpoints(ws: Workspace, commits: list[Commit]) -> set[str]:
    """The checkpoints the ops of ``commits`` restore (their tags must exist to replay them)."""
    restoring = builtins.restoring()
    names = set()
    for commit in commits:
        try:
            op = ledger.parse_message(commit.message)
        except LedgerError:
            continue  # the replay stops there, before any restore after it
        key = restoring.get(op.tool) if op is not None and op.source == "tool" else None
        name = op.args.get(key) if op is not None and key is not None else None
        if isinstance(name, str):
            names.add(name)
    return names


def branch_commits(repo: GitRepo, tip: str, base: str | None) -> tuple[list[Commit], str]:
    """The first-parent commits of ``tip`` that ``base`` does not contain, oldest first, and the
    commit they start from: the first parent of the oldest (``base`` itself when it is on the
    branch), or the root commit when there is no ``base``. A shallow clone's cut among them is
    refused (``depth.ShallowHistory``): the replay would start from what happened to be fetched.
    ``base`` itself may be one: only its tree is read."""
    if base is None:
        commits = repo.log(tip)[::-1]
        depth.require(repo, [c.sha for c in commits] + [p for c in commits for p in c.parents[1:]],
                      "replay")
        return commits[1:], commits[0].sha
    commits = repo.log(f"{base}..{tip}")[::-1]
    # A merge's other parents too: its check merges them, which needs their history.
    depth.require(repo, [c.sha for c in commits] + [p for c in commits for p in c.parents[1:]],
                  "replay")
    if not commits and base != tip:
        raise BadRange(f"{base[:12]} already contains every commit of {tip[:12]}, so there are no "
                       "ops after it to replay.",
                       hint="--from names the commit the ops to replay start after, or the branch "
                            "they forked from.")
    if not commits:
        return [], base
    if not commits[0].parents:
        raise BadRange(f"{tip[:12]} and {base[:12]} have no common history, so no op of "
                       f"{tip[:12]} starts after {base[:12]}.",
                       hint="Pass --from a commit of the branch itself (see 'gitspace log'), or "
                            "leave it out to replay from the root commit.")
    return commits, commits[0].parents[0]


def checkpoint_tags(repo: GitRepo, commits: list[Commit]
                    ) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Checkpoint refs to create now ``{ref: object}``, and those to create once the replay
    reaches a commit ``{commit: [ref]}``: the ones at ``commits``."""
    in_range = {c.sha for c in commits}
    now: dict[str, str] = {}
    later: dict[str, list[str]] = {}
    for ref, obj, peeled in repo.refs("refs/tags/gitspace"):
        if peeled in in_range:
            later.setdefault(peeled, []).append(ref)
        else:
            now[ref] = obj
    return now, later


def run(sc: Scratch, commits: list[Commit], report: ReplayReport, later: dict[str, list[str]],
        apply_recorded: Callable[[Scratch, Commit, ledger.Op | None], Divergence | None], *,
        compare: bool, progress: Progress | None) -> None:
    """Replay ``commits`` in order, stopping at the first divergence (kept in ``report``)."""
    total = len(commits)
    for done, commit in enumerate(commits):
        if progress is not None:
            progress(done, total)
        reporting.report(done, total, "commits replayed")
        problem = _step(sc, commit, report, apply_recorded, compare)
        if problem is not None:
            report.divergence = problem
            return
        if commit.sha in later:
            sc.set_tags(dict.fromkeys(later[commit.sha], sc.tip()))
    if progress is not None:
        progress(total, total)
    reporting.report(total, total, "commits replayed")


def _step(sc: Scratch, commit: Commit, report: ReplayReport,
          apply_recorded: Callable[[Scratch, Commit, ledger.Op | None], Divergence | None],
          compare: bool) -> Divergence | None:
    try:
        return _replay_one(sc, commit, report, apply_recorded, compare)
    except (PathRefused, NotFound) as e:  # history gitspace cannot read (a malformed tree, a
        return diverged(sc, commit, None, e.message, diff=[])  # missing object): it stops here


def _replay_one(sc: Scratch, commit: Commit, report: ReplayReport,
                apply_recorded: Callable[[Scratch, Commit, ledger.Op | None], Divergence | None],
                compare: bool) -> Divergence | None:
    try:
        op = ledger.parse_message(commit.message)
    except LedgerError as e:
        return diverged(sc, commit, None, f"its trailer block is malformed: {e.message}")
    verdict = judge(sc.repo, commit, op)
    if verdict.wrong is not None:
        return diverged(sc, commit, op, verdict.wrong, verdict.against)
    misplaced = opchain.misplaced(sc.repo, commit, op) if compare and op is not None else None
    if misplaced is not None:  # (before anything re-runs: an op moved, or one before it lost)
        return diverged(sc, commit, op, misplaced)
    if verdict.because is not None and op is not None and op.source == "harness" and compare:
        checked = harness_ops.recheck(sc, commit, op)
        if checked.divergence is not None:
            return checked.divergence
        problem = apply_recorded(sc, commit, op)
        if problem is None and checked.because is None:
            report.reexecuted += 1
        elif problem is None and checked.because is not None:
            report.record(checked.because)
        return problem
    if verdict.because is not None:
        problem = apply_recorded(sc, commit, op)
        if problem is None:
            report.record(verdict.because)
        return problem
    assert op is not None and verdict.args is not None
    script = None if report.scripts else script_for(sc.ws, op.tool)
    if workspace_script(script):
        wrong = unrun_script_problem(sc, commit, op, script)
        if wrong is not None:
            return diverged(sc, commit, op, wrong)
        problem = _take_recorded_tree(sc, commit, op)
        if problem is None:
            report.unverified += 1
        return problem
    problem = reexecute(sc, commit, op, verdict.args, compare)
    if problem is None:
        report.reexecuted += 1
    return problem


def _take_recorded_tree(sc: Scratch, commit: Commit, op: ledger.Op | None) -> Divergence | None:
    try:
        sc.commit_tree(commit.tree, commit)
    except (PathRefused, NotFound) as e:  # a path no work tree can hold ("..", ".git"), a
        return diverged(sc, commit, op, e.message)  # malformed tree, a submodule: nothing written
    return None
