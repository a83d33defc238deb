"""Replay: re-run a branch's recorded ops from their arguments and check each rebuilds its tree.

Invariant: replay only reads the user's repository. It works in a scratch workspace (see
``scratch``) that starts at the base and re-runs each op with its recorded tool, arguments, op id,
agent, session and tool-use id; the first op whose outcome differs from its commit stops it, and
the report says which op, why, which paths and a short diff. ``onto.replay_onto`` is the one
variant that writes: a new branch, and only when every op applied.

What is replayed: the first-parent commits ``base..tip``, oldest first. ``base`` is ``--from``, or
else the root commit, which is applied as recorded (there is nothing before it to run it on).

Each commit is either re-executed or applied as recorded (its tree taken as it is):
- applied as recorded: commits that are not ops (no trailer block), ops whose source is
  ``external`` or ``init``, merge commits, and ops with an elided argument whose blob is missing;
- re-executed: every other op. An argument elided to ``{"$blob": sha, "bytes": n}`` is expanded
  from the object store first (the ledger contract keeps it recoverable, and the tool elides it
  again identically), so large ``create`` texts are checked too, not trusted.

An op diverges when, re-run on the replayed state:
- it ran a constraint script (``Gitspace-Script``) whose blob differs from the script it would run
  now: the file in the tree at that op for a workspace script, the installed one for a built-in
  ("the script changed since the op"); it is not run then;
- the tool fails, changes nothing (a recorded op always changed something), or leaves the branch;
- the tree after it differs from the recorded commit's tree (a hand edit under a forged trailer, a
  tool whose behaviour changed, reordered or dropped ops: each shows at the first op it affects);
- the trailers the tool writes differ from the recorded ones (tool, args, source, agent, session,
  tool-use id, undo/redo links, script): a forged ``Gitspace-Undo-Of`` is caught even when the
  files agree.
A malformed trailer block diverges too: nothing in it can be trusted.

Checkpoints: tags ``gitspace/*`` at commits outside ``base..tip`` are copied into the scratch
repository as they are; a tag at a commit inside the range appears there only when the replay
reaches that commit, pointing at the replayed commit. So a restore can use only a checkpoint that
existed at that point of the branch, and after ``--onto`` it restores the moved state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import ledger
from .errors import LedgerError, NotFound
from .gitrepo import Commit, GitRepo
from .replay_op import Divergence, as_recorded_because, diverged, reexecute
from .scratch import Scratch, open_scratch
from .workspace import Workspace

Progress = Callable[[int, int], None]


class BadRange(NotFound):
    """The revisions given do not delimit a sequence of ops (a usage error for the CLI)."""


@dataclass
class Report:
    """What a replay did: counts over the commits of ``base..tip`` and the first divergence."""

    tip: str
    base: str | None
    total: int
    reexecuted: int = 0
    as_recorded: int = 0
    recorded_why: dict[str, int] = field(default_factory=dict)
    divergence: Divergence | None = None
    onto: str | None = None
    branch: str | None = None
    created: str | None = None

    @property
    def ok(self) -> bool:
        return self.divergence is None

    @property
    def checked(self) -> int:
        return self.reexecuted + self.as_recorded

    @property
    def result(self) -> str:
        if self.onto is None:
            return "match" if self.ok else "diverged"
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
           progress: Progress | None = None) -> Report:
    """Re-run the ops of ``base..tip`` (commits) and compare each tree with the recorded one."""
    commits, start = branch_commits(ws.repo, tip, base)
    report = Report(tip, base, len(commits) + (base is None))
    if base is None:
        report.record("root commit")
    with open_scratch(ws.repo, start) as sc:
        now, later = checkpoint_tags(ws.repo, commits, {})
        sc.set_tags(now)
        run(sc, commits, report, later, _take_recorded_tree, compare=True, progress=progress)
    return report


def branch_commits(repo: GitRepo, tip: str, base: str | None) -> tuple[list[Commit], str]:
    """The first-parent commits after ``base`` up to ``tip``, oldest first, and the start commit
    (``base``, or the root commit when there is none)."""
    if base is None:
        commits = repo.log(tip)[::-1]
        return commits[1:], commits[0].sha
    commits = repo.log(f"{base}..{tip}")[::-1]
    if not commits and base != tip:
        raise BadRange(f"{base[:12]} is not an ancestor of {tip[:12]}.",
                       hint="--from names the commit the ops to replay start after.")
    if commits and commits[0].parents[:1] != (base,):
        raise BadRange(f"{base[:12]} is not on the first-parent history of {tip[:12]}, so there "
                       "is no sequence of ops from one to the other.",
                       hint="Pass --from a commit of the branch itself (see 'gitspace log').")
    return commits, base


def checkpoint_tags(repo: GitRepo, commits: list[Commit], moved: dict[str, str]
                    ) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Checkpoint refs to create now ``{ref: object}``, and those to create once the replay
    reaches a commit ``{commit: [ref]}``; ``moved`` maps an original commit to its stand-in."""
    in_range = {c.sha for c in commits}
    now: dict[str, str] = {}
    later: dict[str, list[str]] = {}
    for ref, obj, peeled in repo.refs("refs/tags/gitspace"):
        if peeled in in_range:
            later.setdefault(peeled, []).append(ref)
        else:
            now[ref] = moved.get(peeled, obj)
    return now, later


def run(sc: Scratch, commits: list[Commit], report: Report, later: dict[str, list[str]],
        apply_recorded: Callable[[Scratch, Commit, ledger.Op | None], Divergence | None], *,
        compare: bool, progress: Progress | None) -> None:
    """Replay ``commits`` in order, stopping at the first divergence (kept in ``report``)."""
    total = len(commits)
    for done, commit in enumerate(commits):
        if progress is not None:
            progress(done, total)
        problem = _step(sc, commit, report, apply_recorded, compare)
        if problem is not None:
            report.divergence = problem
            return
        if commit.sha in later:
            sc.set_tags(dict.fromkeys(later[commit.sha], sc.tip()))
    if progress is not None:
        progress(total, total)


def _step(sc: Scratch, commit: Commit, report: Report,
          apply_recorded: Callable[[Scratch, Commit, ledger.Op | None], Divergence | None],
          compare: bool) -> Divergence | None:
    try:
        op = ledger.parse_message(commit.message)
    except LedgerError as e:
        return diverged(sc, commit, None, f"its trailer block is malformed: {e.message}")
    why, args = as_recorded_because(sc.repo, commit, op)
    if why is not None:
        problem = apply_recorded(sc, commit, op)
        if problem is None:
            report.record(why)
        return problem
    assert op is not None
    problem = reexecute(sc, commit, op, args, compare)
    if problem is None:
        report.reexecuted += 1
    return problem


def _take_recorded_tree(sc: Scratch, commit: Commit, op: ledger.Op | None) -> Divergence | None:
    sc.commit_tree(commit.tree, commit)
    return None
