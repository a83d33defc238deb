"""``gitspace provenance [REV | RANGE]``: who wrote the lines a commit, or a pull request's
range, adds: each agent (harness, session, model), each person, and what no record covers.

Invariants:
- Read from the notes (anyone's compliant ones) and, for a commit that is itself an op (a
  workspace's, never squashed), from its trailers: every line it adds is its call's. Nothing is
  computed from local transcripts, so a clone shows what the recording checkout shows.
- ``added`` counts the lines each commit adds or changes against its first parent, as
  ``attribute.changed_files`` finds them; ``unattested`` is what no note or op names.
- A note that cannot be read is reported (``problem``) and counts as none.
"""

from __future__ import annotations

from ..errors import NotFound
from ..storage import ledger
from ..storage.gitrepo import GitRepo
from ..storage.records import field, record
from . import attribute, authorship, sources
from .notes import Notes

RANGE_MAX = 10_000  # commits a report reads at most


@record()
class Agent:
    agent: str
    harness: str | None
    session: str | None
    model: str | None
    lines: int = 0
    calls: set[str] = field(default_factory=set)

    def as_json(self) -> dict[str, object]:
        return {"agent": self.agent, "harness": self.harness, "session": self.session,
                "model": self.model, "lines": self.lines, "calls": len(self.calls)}


@record()
class CommitReport:
    commit: str
    subject: str
    time: int
    noted: bool
    added: int
    agents: dict[tuple[str, str | None, str | None], Agent] = field(default_factory=dict)
    people: dict[str, int] = field(default_factory=dict)
    problem: str | None = None

    @property
    def agent_lines(self) -> int:
        return sum(a.lines for a in self.agents.values())

    @property
    def person_lines(self) -> int:
        return sum(self.people.values())

    @property
    def unattested(self) -> int:
        return max(0, self.added - self.agent_lines - self.person_lines)

    def as_json(self) -> dict[str, object]:
        return {"commit": self.commit, "subject": self.subject, "time": self.time,
                "noted": self.noted, "added": self.added, "agent_lines": self.agent_lines,
                "person_lines": self.person_lines, "unattested": self.unattested,
                "agents": [a.as_json() for a in self.agents.values()],
                "people": [{"author": k, "lines": v} for k, v in self.people.items()],
                "problem": self.problem}


def commits_of(repo: GitRepo, spec: str | None) -> list[str]:
    """The commits ``spec`` names, oldest first: one revision, or a range git understands."""
    spec = spec or "HEAD"
    if spec.startswith("-"):
        raise NotFound(f"{spec!r} is no revision.", hint="Name a commit or a range A..B.")
    if ".." in spec:
        proc = repo.run_git("rev-list", "--reverse", f"--max-count={RANGE_MAX}", spec, "--")
    else:
        proc = repo.run_git("rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}", "--")
    out = proc.stdout.decode().split()
    if proc.returncode != 0 or not out and ".." not in spec:
        raise NotFound(f"{spec!r} names no commit here.",
                       hint="Name a commit (HEAD, a branch, an id) or a range (main..feature).")
    return [s for s in out if len(s) == 40]


def report(repo: GitRepo, spec: str | None) -> list[CommitReport]:
    notes = Notes(repo)
    return [commit_report(repo, notes, sha) for sha in commits_of(repo, spec)]


def commit_report(repo: GitRepo, notes: Notes, sha: str) -> CommitReport:
    commit = repo.commit(sha)
    added = sum(len(lines) for lines, _ in attribute.changed_files(repo, commit).values())
    out = CommitReport(sha, commit.message.split("\n", 1)[0], commit.time, False, added)
    note = notes.get(sha)
    if sha in notes.refused:
        out.problem = notes.refused[sha]
    if note is not None:
        out.noted = True
        for entries in note.files.values():
            for attested, ranges in entries.items():
                _count(out, note, attested, authorship.count(ranges))
        return out
    op = ledger.op_or_none(commit.message)
    if op is not None:
        key, _, call = sources.key_of(op, attribute.identity(commit.author), sha, commit.time)
        if call is not None:
            agent = out.agents.setdefault((call.agent, call.session, None), Agent(
                call.agent, sources.harness_tool(call.agent), call.session, None))
            agent.lines += added
            agent.calls.add(call.op_id)
        elif key is not None:
            name = commit.author.rsplit(" ", 2)[0].split(" <")[0]
            out.people[name] = out.people.get(name, 0) + added
    return out


def _count(out: CommitReport, note: authorship.Note, key: str, lines: int) -> None:
    record_ = note.record_of(key) or {}
    head, trace = authorship.split_key(key)
    if authorship.kind_of(key) == "person":
        who = record_.get("author")
        name: str = who.split(" <")[0] if isinstance(who, str) else head
        out.people[name] = out.people.get(name, 0) + lines
        return
    agent_id = record_.get("agent_id") if isinstance(record_.get("agent_id"), dict) else {}
    assert isinstance(agent_id, dict)
    traced = note.traces.get(trace or "", {})
    agent: str = _text(traced.get("agent")) or _text(agent_id.get("tool")) or "agent"
    session = _text(agent_id.get("id"))
    model = _text(agent_id.get("model"))
    found = out.agents.setdefault((agent, session, model), Agent(
        agent, _text(agent_id.get("tool")), session, model))
    found.lines += lines
    found.calls.add(trace or head)


def totals(reports: list[CommitReport]) -> dict[str, object]:
    agents: dict[tuple[str, str | None, str | None], Agent] = {}
    people: dict[str, int] = {}
    for r in reports:
        for k, a in r.agents.items():
            into = agents.setdefault(k, Agent(a.agent, a.harness, a.session, a.model))
            into.lines += a.lines
            into.calls |= a.calls
        for name, n in r.people.items():
            people[name] = people.get(name, 0) + n
    return {
        "total": {"commits": len(reports), "noted": sum(r.noted for r in reports),
                  "added": sum(r.added for r in reports),
                  "agent_lines": sum(r.agent_lines for r in reports),
                  "person_lines": sum(r.person_lines for r in reports),
                  "unattested": sum(r.unattested for r in reports)},
        "agents": [a.as_json() for a in sorted(agents.values(), key=lambda a: -a.lines)],
        "people": [{"author": k, "lines": v} for k, v in sorted(people.items(),
                                                                 key=lambda kv: -kv[1])],
    }


def as_json(spec: str | None, reports: list[CommitReport]) -> dict[str, object]:
    return {"range": spec or "HEAD", "commits": [r.as_json() for r in reports],
            **totals(reports)}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


