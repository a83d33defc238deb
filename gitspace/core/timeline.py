"""Reading the ledger back: the op timeline humans and agents see, and ``verify``.

Invariant: everything here is derived from commits and tags alone, so it reads the same in any
clone and after any restart. Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import LedgerError, NotFound
from ..storage import ledger
from ..storage.gitrepo import Commit
from . import checkpoints
from .workspace import Workspace


@dataclass
class Entry:
    commit: str
    time: int
    author: str
    subject: str
    op: ledger.Op | None
    files: list[str] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    problem: str | None = None

    def as_json(self) -> dict[str, object]:
        op = self.op
        return {
            "commit": self.commit, "time": self.time, "author": self.author,
            "subject": self.subject, "files": self.files, "checkpoints": self.checkpoints,
            "op": None if op is None else {
                "id": op.op_id, "tool": op.tool, "args": op.args, "source": op.source,
                "agent": op.agent, "session": op.session, "tool_use_id": op.tool_use_id,
                "undo_of": list(op.undo_of), "redo_of": op.redo_of,
            },
            "problem": self.problem,
        }


def _entry(ws: Workspace, commit: Commit, marks: dict[str, list[str]]) -> Entry:
    problem = None
    try:
        op = ledger.parse_message(commit.message)
    except LedgerError as e:
        op, problem = None, str(e)
    parent_tree = ws.repo.parent_tree(commit)
    files = [c.path for c in ws.repo.diff_trees(parent_tree, commit.tree)]
    return Entry(commit.sha, commit.time, commit.author_name,
                 commit.message.split("\n", 1)[0], op, files, marks.get(commit.sha, []), problem)


def timeline(ws: Workspace, limit: int | None = 20, rev: str | None = None) -> list[Entry]:
    """Newest first: the ops (and any other commits) on a branch."""
    marks: dict[str, list[str]] = {}
    for cp in checkpoints.listing(ws):
        marks.setdefault(cp.commit, []).append(cp.name)
    target = rev or f"refs/heads/{ws.branch()}"
    return [_entry(ws, c, marks) for c in ws.repo.log(target, limit)]


def find(ws: Workspace, ref: str) -> Entry:
    """An op by id (on the current branch) or any revision git understands."""
    if ledger.OP_ID.fullmatch(ref):
        for commit in ws.repo.log(f"refs/heads/{ws.branch()}"):
            if f"Gitspace-Op: {ref}\n" in commit.message + "\n":
                return _entry(ws, commit, {})
    sha = ws.repo.resolve(ref)
    if sha is None:
        raise NotFound(f"{ref!r} is neither an op id on this branch nor a revision.",
                       hint="'gitspace log' lists op ids and commits.")
    return _entry(ws, ws.repo.commit(sha), {})


@dataclass
class Report:
    commits: int = 0
    ops: int = 0
    foreign: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(ws: Workspace, rev: str | None = None) -> Report:
    """Re-parse every commit of a branch; report malformed ops and broken links."""
    report = Report()
    seen: set[str] = set()
    links: list[tuple[str, str]] = []
    for commit in ws.repo.log(rev or f"refs/heads/{ws.branch()}"):
        report.commits += 1
        try:
            op = ledger.parse_message(commit.message)
        except LedgerError as e:
            report.problems.append((commit.sha, str(e)))
            continue
        if op is None:
            report.foreign += 1
            continue
        report.ops += 1
        if op.op_id in seen:
            report.problems.append((commit.sha, f"op id {op.op_id} appears twice"))
        seen.add(op.op_id)
        links += [(commit.sha, u) for u in op.undo_of]
        if op.redo_of:
            links.append((commit.sha, op.redo_of))
        for value in op.args.values():
            if isinstance(value, dict) and "$blob" in value and not ws.repo.has_object(
                    str(value["$blob"])):
                report.problems.append((commit.sha, f"elided argument blob {value['$blob']} is missing"))
    for sha, target in links:
        if target not in seen:
            report.problems.append((sha, f"links to op {target}, which is not on this branch"))
    return report
