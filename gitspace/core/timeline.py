"""Reading the ledger back: the op timeline humans and agents see, and ``verify``.

Invariant: everything here is derived from commits and tags alone, so it reads the same in any
clone, any checkout (a detached HEAD, a shallow clone, a repository gitspace does not own) and
after any restart. Nothing here writes. Every reader (the CLI's log, MCP, the agent's log tool,
the web view) goes through ``query``: a page costs a fixed number of git processes, never work
per commit in Python.

``query`` is the paged timeline for readers that run beside writers (the web view): it takes a
``GitRepo``, not a ``Workspace`` (opening a workspace may finish a crashed op, which writes), and
reads only through ``git --no-optional-locks`` processes, so it never takes a lock an op needs
and is safe to call from several threads at once. A page is one ``git log`` call (plus a
``rev-list --count``); with filters, one more ``git log`` lists the candidates, pre-filtered by
git's ``--grep`` on the trailer lines and checked exactly here on the parsed trailers.
"""

from __future__ import annotations

import json
import os
import re
import threading

from ..errors import BadArguments, LedgerError, NotFound
from ..storage import ids, ledger, opchain
from ..storage.gitrepo import GitRepo
from ..storage.records import field, record
from . import depth, linerefs

TYPE_CHECKING = False  # typing is not imported at run time: a read of the CLI starts without it
if TYPE_CHECKING:
    from .workspace import Workspace

# The sentence a recorder writes in a failed harness call's body (harness/record.py,
# harness/recorder.py), with the harness's reason in its parentheses.
_FAILED = re.compile(r"^The call failed \((.*)\); these are the changes it left\.$", re.M)


@record()
class LogEntry:
    commit: str
    time: int
    author: str
    subject: str
    op: ledger.Op | None
    files: list[str] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    problem: str | None = None
    parents: tuple[str, ...] = ()
    message: str = ""  # the whole commit message (``query`` and ``entry`` fill it)

    @property
    def source(self) -> str:
        """tool, script, external, init, transcript; "commit" for a commit that is no op."""
        return source_of(self.op)

    @property
    def agent(self) -> str:
        """Who made it, the one name every reader shows: an op's agent; for an op made with no
        agent (a person's: at the command line, their outside edits), the author's name as
        the token their ops carry (``person.token``); for a plain commit, its author's name."""
        if self.op is not None:
            from .person import token  # (here: only an op with no agent needs it)

            return self.op.agent or token(self.author)
        return self.author

    @property
    def short(self) -> str:
        """What names it in a listing: an op's short form, else the commit's (``ids``)."""
        return ids.op(self.op.op_id) if self.op else ids.commit(self.commit)

    @property
    def failed(self) -> str | None:
        """Why the harness call this op records failed, as the harness said (its recorder
        writes that in the body: a failed call that left changes is still recorded); None
        when it did not fail (or is no harness call)."""
        if self.op is None or self.op.source != "harness":
            return None
        found = _FAILED.search(self.message.split("\n\n", 1)[1] if "\n\n" in self.message
                               else "")
        return found.group(1) if found else None

    def as_json(self) -> dict[str, object]:
        op = self.op
        return {
            "commit": self.commit, "parents": list(self.parents), "time": self.time,
            "author": self.author, "agent": self.agent, "subject": self.subject,
            "files": self.files, "checkpoints": self.checkpoints,
            "op": None if op is None else {
                "id": op.op_id, "short": ids.op(op.op_id), "tool": op.tool,
                "args": op.args, "source": op.source,
                "agent": op.agent, "session": op.session,
                "session_short": ids.session(op.session) if op.session else None,
                "failed": self.failed, "tool_use_id": op.tool_use_id,
                "undo_of": list(op.undo_of), "redo_of": op.redo_of,
                "parent_session": op.parent_session, "parent_tool_use_id": op.parent_tool_use_id,
            },
            "problem": self.problem,
        }


def timeline(ws: Workspace, limit: int | None = 20, rev: str | None = None) -> list[LogEntry]:
    """Newest first: the ops (and any other commits) of ``rev`` (default HEAD)."""
    return query(ws.repo, rev or "HEAD", limit=ALL if limit is None else limit,
                 count=False).entries


def find(ws: Workspace, ref: str) -> LogEntry:
    """What ``ref`` names (an op id or part of one, a checkpoint, a branch, any revision: see
    ``lookup.resolve``), as a timeline entry."""
    from . import lookup  # (here: the op index it reads is no cost of a plain log)

    return entry(ws.repo, lookup.resolve(ws.repo, ref.strip()).commit)


@record()
class VerifyReport:
    commits: int = 0
    ops: int = 0
    foreign: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(ws: Workspace, rev: str | None = None, base: str | None = None) -> VerifyReport:
    """Re-parse every first-parent commit of a branch (with ``base``: those ``base`` does not
    contain); report malformed ops and broken links. A shallow clone's cut inside what it reads
    is refused (``depth``)."""
    from .. import progress  # (here: a read of the log reports no progress)

    report = VerifyReport()
    seen: set[str] = set()
    links: list[tuple[str, str]] = []
    target = rev or ("HEAD" if ws.repo.read_ref("HEAD") else None)  # detached (CI) too
    commits = ws.repo.log(f"{base}..{target}" if base and target else target) if target else []
    depth.require(ws.repo, (c.sha for c in commits), "verify")
    ledger.require_known((c.message for c in commits), "verify")
    for commit in commits:
        if report.commits % VERIFY_STEP == 0:
            progress.report(report.commits, len(commits), "commits verified")
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
        misplaced = opchain.misplaced(ws.repo, commit, op)
        if misplaced is not None:
            report.problems.append((commit.sha, f"op {op.op_id} {misplaced}"))
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
    if base and target and any(t not in seen for _, t in links):
        seen |= _op_ids_before(ws.repo, f"{target}", set(c.sha for c in commits))
    for sha, target_op in links:
        if target_op not in seen:
            report.problems.append((sha, f"links to op {target_op}, which is not on this branch"))
    progress.report(report.commits, max(len(commits), 1), "commits verified")
    return report


VERIFY_STEP = 256  # commits between two progress reports of verify


def _op_ids_before(repo: GitRepo, rev: str, checked: set[str]) -> set[str]:
    """The op ids of ``rev``'s first-parent history outside ``checked`` (links may point there)."""
    older = [c for c in repo.log(rev) if c.sha not in checked]
    depth.require(repo, (c.sha for c in older), "verify")
    ids = set()
    for commit in older:
        try:
            op = ledger.parse_message(commit.message)
        except LedgerError:
            continue
        if op is not None:
            ids.add(op.op_id)
    return ids


# -- the paged query --------------------------------------------------------------------------

PAGE = 50
SOURCES = ("tool", "script", *(s for s in ledger.SOURCES if s != "tool"), "commit")
# filter -> (trailer key git can pre-filter on, the Op field it is)
_TRAILER_FILTERS = (("agent", "Gitspace-Agent", "agent"), ("tool", "Gitspace-Tool", "tool"))


def _printable(name: str, value: str | None) -> None:
    if value is not None and any(ord(c) < 32 or c == "\x7f" for c in value):
        raise BadArguments(f"The {name} filter holds a control character.",
                           hint="Filter on printable text.")


def source_of(op: ledger.Op | None) -> str:
    if op is None:
        return "commit"
    return "script" if op.script else op.source


@record(frozen=True)
class Filters:
    """Which commits a timeline shows. Every value given must match exactly, except ``text``: a
    case-insensitive piece of the subject or of the args, and ``session``: any form of a session
    id (``ids.names_session``: its short form, a start or end, a turn mark's prefix; ``query``
    refuses a part that two sessions share). ``path`` (or several, ``paths``) keeps
    commits that change it (a file, or anything under a folder). ``since`` and ``until`` are
    dates as git reads them ("2 days ago", "2025-01-31"), on the commit time."""

    agent: str | None = None
    session: str | None = None
    tool: str | None = None
    source: str | None = None
    path: str | None = None
    text: str | None = None
    paths: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None

    def __post_init__(self) -> None:
        if self.path is not None and self.path not in self.paths:
            object.__setattr__(self, "paths", (self.path, *self.paths))
        for name in ("agent", "session", "tool", "source", "text", "since", "until"):
            _printable(name, getattr(self, name))
        for one in self.paths:
            _printable("path", one)
        if self.source is not None and self.source not in SOURCES:
            raise BadArguments(f"There is no op source {self.source!r}.",
                               hint="Sources: " + ", ".join(SOURCES) + ".")

    @property
    def active(self) -> bool:
        return any((self.agent, self.session, self.tool, self.source, self.paths, self.text,
                    self.since, self.until))

    def _exact(self) -> list[tuple[str, str, str]]:
        return [(key, attr, getattr(self, name)) for name, key, attr in _TRAILER_FILTERS
                if getattr(self, name)]

    def greps(self) -> list[str]:
        """Extended regexes git's --grep can pre-filter on: each matches a superset of what
        ``accepts`` keeps (checked exactly afterwards, so a Result paragraph that quotes a trailer
        line is no false match)."""
        patterns = [f"^{key}: {_ere(value)}$" for key, _, value in self._exact()]
        if self.session:
            part = ids.session_part(self.session)
            body = part.rsplit("-", 1)[-1]  # (a turn mark's prefix: claude-code-84836b81)
            patterns.append(f"^Gitspace-Session: .*({_ere(part)}|{_ere(body)})")
        if self.source == "script":
            patterns.append("^Gitspace-Script: ")
        elif self.source in ledger.SOURCES:
            patterns.append(f"^Gitspace-Source: {self.source}$")
        if self.text and _verbatim_in_json(self.text):
            patterns.append(_ere(self.text))  # run with -i: still a superset
        return patterns

    def accepts(self, subject: str, op: ledger.Op | None) -> bool:
        """Does a commit with this subject and op (None: no op, or a malformed one) match?"""
        for _, attr, value in self._exact():
            if op is None or getattr(op, attr) != value:
                return False
        if self.session and not (op is not None and op.session is not None
                                 and ids.names_session(self.session, op.session)):
            return False
        if self.source is not None and self.source != source_of(op):
            return False
        if self.text:
            needle = self.text.casefold()
            args = [] if op is None else [ledger.canonical_json(op.args),
                                          json.dumps(op.args, ensure_ascii=False)]
            return any(needle in hay.casefold() for hay in (subject, *args))
        return True


ALL = 1_000_000_000  # a limit that takes every entry (git reads -n as an int)


@record()
class Page:
    entries: list[LogEntry]
    total: int  # commits that match, on every page (-1: not counted, count=False)
    offset: int
    limit: int


class Counts:
    """How many commits lie below a tip, remembered across pages: the history under a commit
    never changes, so when a branch moves forward only the commits it gained are counted
    (``git rev-list --count`` of 10,000 commits reads every one of them). Thread-safe."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, bool], tuple[str, int]] = {}
        self._lock = threading.Lock()

    def total(self, repo: GitRepo, rev: str, tip: str, first_parent: bool) -> int:
        """Commits reachable from ``tip`` (what ``rev`` points at now)."""
        walk = ["--first-parent"] if first_parent else []
        with self._lock:
            old = self._known.get((rev, first_parent))
        if old is not None and old[0] == tip:
            return old[1]
        total = None
        if old is not None and first_parent:
            gained = int(repo.read_git("rev-list", "--count", *walk, f"{old[0]}..{tip}", "--")
                         .decode().strip() or 0)
            if repo.rev_parse(f"{tip}~{gained}") == old[0]:  # moved forward along first parents
                total = old[1] + gained
        if total is None:
            total = int(repo.read_git("rev-list", "--count", *walk, tip, "--").decode().strip()
                        or 0)
        with self._lock:
            self._known[(rev, first_parent)] = (tip, total)
        return total


def query(repo: GitRepo, rev: str | None, filters: Filters | None = None, *, offset: int = 0,
          limit: int = PAGE, first_parent: bool = True, counts: Counts | None = None,
          count: bool = True, also: tuple[str, ...] = ()) -> Page:
    """One page of the timeline of ``rev`` (a full ref name or a commit id; None: every branch),
    newest first. ``counts`` remembers totals between calls (a long-running reader keeps one);
    ``count=False`` skips the total (a one-shot reader such as ``gitspace log``). ``also``: more
    revisions whose commits join the list (a line recorded in place, and the branch it
    follows)."""
    filters = filters or Filters()
    revs = _revs(rev) + [r for r in also if r and not r.startswith("-")]
    offset, limit = max(offset, 0), max(limit, 1)
    if not _has_commits(repo, revs):
        return Page([], 0, offset, limit)
    if len(revs) == 2 and also:  # a line recorded in place, and the branch it follows
        return _interleaved_page(repo, revs, filters, offset, limit, count)
    if not filters.active:
        tip = repo.rev_parse(rev) if rev is not None and counts is not None and not also else None
        args = _walk([tip] if tip else revs, first_parent)  # one tip for the count and the page
        total = -1
        if tip and counts is not None and rev is not None:
            total = counts.total(repo, rev, tip, first_parent)
        elif count:
            total = int(repo.read_git("rev-list", "--count", *args).decode().strip() or 0)
        # Several tips (every branch): children before their parents whatever their dates say
        # (--date-order), and within one second the ops in the order they were made.
        order = ["--date-order"] if len(revs) > 1 and not first_parent else []
        found = _entries(repo, ["log", *order, f"--skip={offset}", f"-n{limit}", *args])
        return Page(_same_second_by_op(found) if order else found, total, offset, limit)
    matches = _candidates(repo, revs, filters, first_parent)
    chosen = matches[offset:offset + limit]
    found = _entries(repo, ["log", "--no-walk=unsorted", *chosen, "--"]) if chosen else []
    return Page(found, len(matches), offset, limit)


def _interleaved_page(repo: GitRepo, revs: list[str], filters: Filters, offset: int, limit: int,
                      count: bool) -> Page:
    """A page of a line recorded in place and the person's branch as one list: the part only
    one of them holds in ``interleaved`` order, then the history both share, in git's order."""
    top = interleaved(repo, revs[0], revs[1])
    shared = repo.read_git("merge-base", "--all", *revs, check=False).decode().split()
    if filters.active:
        rank = {sha: n for n, sha in enumerate(top)}
        matches = sorted(_candidates(repo, revs, filters, False),
                         key=lambda sha: rank.get(sha, len(top)))
        chosen = matches[offset:offset + limit]
        found = _entries(repo, ["log", "--no-walk=unsorted", *chosen, "--"]) \
            if chosen else []
        return Page(found, len(matches), offset, limit)
    chosen = top[offset:offset + limit]
    found = _entries(repo, ["log", "--no-walk=unsorted", *chosen, "--"]) if chosen else []
    more = limit - len(found)
    if more > 0 and shared:
        skip = max(offset - len(top), 0)
        found += _entries(repo, ["log", f"--skip={skip}", f"-n{more}", *shared, "--"])
    total = -1
    if count:
        total = len(top) + (int(repo.read_git("rev-list", "--count", *shared, "--").decode())
                            if shared else 0)
    return Page(found, total, offset, limit)


def interleaved(repo: GitRepo, line_ref: str, head: str) -> list[str]:
    """The commits only the line ``line_ref`` or only the person's ``head`` holds, newest first,
    in the order things happened rather than by their dates (a skewed clock, one second for
    both, or a rebase that kept old dates would mislead): the line's own in its order, and each
    of the person's commits right below the follow op that followed it (the oldest, if several
    did), with the older ones it brought along below it; one no follow op names yet (made since
    the last call) is newer than all of the line's."""
    def listed(*args: str) -> list[str]:
        return repo.read_git("rev-list", "--topo-order", *args, "--").decode().split()

    ours, theirs = listed(line_ref, f"^{head}"), listed(head, f"^{line_ref}")
    if not theirs:
        return ours
    where = {sha: n for n, sha in enumerate(ours)}
    followed: dict[str, int] = {}  # the person's commit -> the oldest follow op naming it
    for brief in briefs(repo, ["--topo-order", "-E", f"--grep=^Gitspace-Tool: {linerefs.FOLLOW}$",
                               line_ref, f"^{head}", "--"]):
        named = brief.op.args.get("commit") if brief.op is not None else None
        if brief.op is not None and brief.op.tool == linerefs.FOLLOW and isinstance(named, str):
            followed[named] = max(followed.get(named, -1), where.get(brief.commit, -1))
    below: dict[int, list[str]] = {}  # a position in ``ours`` (-1: above all) -> theirs there
    slot = -1
    for sha in theirs:
        slot = max(slot, followed.get(sha, -1))
        below.setdefault(slot, []).append(sha)
    found = below.get(-1, [])
    for n, sha in enumerate(ours):
        found += [sha, *below.get(n, [])]
    return found


def entry(repo: GitRepo, sha: str) -> LogEntry:
    """The timeline entry of one commit (``sha`` as ``locate`` returns it)."""
    found = entries_of(repo, [sha])
    if not found:
        raise NotFound(f"There is no commit {sha}.")
    return found[0]


def entries_of(repo: GitRepo, shas: list[str]) -> list[LogEntry]:
    """The entries of these commits (full ids, as ``lookup.resolve`` finds), in the order given."""
    if any(not re.fullmatch(r"[0-9a-f]{40,64}", sha) for sha in shas):
        raise BadArguments("Only full commit ids name entries.", hint="Use lookup.resolve() first.")
    if not shas:
        return []
    return _entries(repo, ["log", "--no-walk=unsorted", *shas, "--"])


_OP_FIELDS = {"Gitspace-Op": "op_id", "Gitspace-Tool-Use-Id": "tool_use_id",
              "Gitspace-Agent": "agent", "Gitspace-Session": "session", "Gitspace-Tool": "tool"}


def find_trailer(repo: GitRepo, key: str, value: str) -> str | None:
    """The newest commit on any ref whose op's trailer ``key`` is exactly ``value`` (tool-use ids
    are unique, so this finds the op; for op ids, ``lookup.find_op`` looks in tags and reflogs
    too)."""
    attr = _OP_FIELDS.get(key)
    if attr is None or not ledger.TOKEN.fullmatch(value):
        return None
    for brief in briefs(repo, ["--all", "-E", f"--grep=^{key}: {_ere(value)}$", "--"]):
        if brief.op is not None and getattr(brief.op, attr) == value:
            return brief.commit
    return None


def checkpoint_marks(repo: GitRepo) -> dict[str, list[str]]:
    """Commit -> the checkpoint names at it (one for-each-ref, no tag contents read)."""
    marks: dict[str, list[str]] = {}
    for ref, _, commit in repo.refs(ledger.CHECKPOINTS.rstrip("/")):
        marks.setdefault(commit, []).append(ref[len(ledger.CHECKPOINTS):])
    return marks


def every_line() -> list[str]:
    """What "every branch" means to git log: the branches, and the lines recorded in place."""
    return ["--branches", f"--glob={linerefs.LINES}*", f"--glob={linerefs.DETACHED}/*",
            f"--glob={linerefs.GONE}*", f"--glob={linerefs.MOVING}*"]


def _revs(rev: str | None) -> list[str]:
    if rev is None:
        return every_line()
    if not rev or rev.startswith("-"):
        raise BadArguments(f"{rev!r} is not a revision.", hint="Pass a branch or a commit id.")
    return [rev]


def _walk(revs: list[str], first_parent: bool) -> list[str]:
    return [*(["--first-parent"] if first_parent else []), *revs, "--"]


def _has_commits(repo: GitRepo, revs: list[str]) -> bool:
    if revs[:1] == ["--branches"]:
        return bool(repo.refs("refs/heads/")) or bool(linerefs.lines(repo))
    if revs[:1] == ["HEAD"]:  # (read without starting git: HEAD names a commit or nothing)
        return repo.read_ref("HEAD") is not None
    return repo.rev_parse(revs[0]) is not None


def _candidates(repo: GitRepo, revs: list[str], filters: Filters, first_parent: bool) -> list[str]:
    """Every commit that matches ``filters``, newest first."""
    greps = filters.greps()
    args = ["--first-parent"] if first_parent else []
    if len(revs) > 1:
        args.append("--topo-order")  # several lines of history: children before their parents
    if greps:
        args += ["-E", "-i", "--all-match", *(f"--grep={g}" for g in greps)]
    args += [f"--since={filters.since}"] if filters.since else []
    args += [f"--until={filters.until}"] if filters.until else []
    paths = [p.strip("/") or "." for p in filters.paths]
    found = [b for b in briefs(repo, [*args, *revs, "--", *paths])
             if filters.accepts(b.subject, b.op)]
    if filters.session:
        _one_session(filters.session, {b.op.session for b in found if b.op and b.op.session})
    return [b.commit for b in found]


def _one_session(text: str, sessions: set[str]) -> None:
    """A session filter that is part of two sessions' ids names neither: refuse it."""
    if len(sessions) > 1 and text not in sessions:
        shown = ", ".join(f"{ids.session(s)} ({s})" for s in sorted(sessions)[:5]) + (
            ", ..." if len(sessions) > 5 else "")
        raise BadArguments(f"{text!r} is part of {len(sessions)} session ids: {shown}.",
                           hint="Give more characters of the one you mean, or the whole id.")


@record(frozen=True)
class Brief:
    """A commit without its body or files: enough to draw it in a graph."""

    commit: str
    parents: tuple[str, ...]
    time: int
    author: str
    subject: str
    op: ledger.Op | None  # None for a commit that is no op, or a malformed one


def briefs(repo: GitRepo, log_args: list[str]) -> list[Brief]:
    """Briefs from one ``git log`` that reads no bodies and no diffs. The separator is random per
    call, so no commit message can fake a record boundary."""
    token = os.urandom(8).hex()  # (secrets.token_hex, without importing secrets)
    fmt = "%H{t}%P{t}%at{t}%an{t}%s{t}%(trailers:only,unfold)".replace("{t}", token)
    out = repo.read_git("--literal-pathspecs", "log", f"--format={token}{fmt}", *log_args)
    parts = out.decode("utf-8", "replace").split(token)
    return [Brief(parts[i], tuple(parts[i + 1].split()), int(parts[i + 2] or 0), parts[i + 3],
                  parts[i + 4], _op_of(parts[i + 4], parts[i + 5]))
            for i in range(1, len(parts) - 5, 6)]


def _op_of(subject: str, trailers: str) -> ledger.Op | None:
    """The op in the trailer lines git printed for a commit, read by the ledger's own parser."""
    try:
        return ledger.parse_message(f"{subject or 'op'}\n\n{trailers}")
    except LedgerError:
        return None


def _entries(repo: GitRepo, log_args: list[str]) -> list[LogEntry]:
    """Entries from one ``git log`` call: ids, parents, author, message, changed files, and the
    checkpoints at each commit (git's own decorations, limited to checkpoint tags and peeled to
    the commit: no listing of the tags apart, no tag read)."""
    start, end = "\x1e" + os.urandom(8).hex(), os.urandom(8).hex() + "\x1f"
    fmt = f"--format={start}%H%x1f%P%x1f%at%x1f%an%x1f%D%x1f%B{end}"
    out = repo.read_git(log_args[0], "-z", "--name-only", "--diff-merges=first-parent", fmt,
                        f"--decorate-refs={ledger.CHECKPOINTS}", "--decorate=full",
                        *log_args[1:]).decode("utf-8", "replace")
    found = []
    for chunk in out.split(start)[1:]:
        head, _, names = chunk.partition(end)
        sha, parents, when, author, decorations, message = head.split("\x1f", 5)
        problem = None
        try:
            op = ledger.parse_message(message)
        except LedgerError as e:
            op, problem = None, str(e)
        names = names.removeprefix("\0").removeprefix("\n")
        found.append(LogEntry(sha, int(when or 0), author, message.split("\n", 1)[0], op,
                           [n for n in names.split("\0") if n], _checkpoints_in(decorations),
                           problem, tuple(parents.split()), message))
    return found


def _checkpoints_in(decorations: str) -> list[str]:
    """The checkpoint names in git's ``%D`` of one commit (``tag: refs/tags/gitspace/NAME, ...``:
    a ref name holds no space), sorted as a listing of the tags sorts them."""
    tag = "tag: " + ledger.CHECKPOINTS
    return sorted(d[len(tag):] for d in decorations.split(", ") if d.startswith(tag))


def _same_second_by_op(entries: list[LogEntry]) -> list[LogEntry]:
    """``entries`` with each run of ops made in the same second put in the order their ids say
    they were made, newest first (an op id is a ULID: its start is the millisecond, and an op
    is always made after the op it follows, so a child still comes before its parent)."""
    out: list[LogEntry] = []
    run: list[LogEntry] = []
    for e in [*entries, None]:
        if e is not None and e.op is not None and run and e.time == run[0].time:
            run.append(e)
            continue
        out += _by_op_id(run)
        run = [e] if e is not None and e.op is not None else []
        if e is not None and e.op is None:
            out.append(e)
    return out


def _by_op_id(run: list[LogEntry]) -> list[LogEntry]:
    """``run`` newest op id first, unless that would put a commit before one of its children
    (an op re-made elsewhere keeps its id: ``sync``, ``replay --onto``): then as git had it."""
    ordered = sorted(run, key=lambda r: r.op.op_id if r.op else "", reverse=True)
    seen: set[str] = set()
    for e in ordered:
        if any(p in seen for p in e.parents):
            return run
        seen.add(e.commit)
    return ordered


def _verbatim_in_json(text: str) -> bool:
    """Would ``text`` appear as it is in canonical JSON (ASCII, nothing JSON escapes)?"""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def _ere(text: str) -> str:
    """``text`` as a literal inside a POSIX extended regex."""
    return re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", text)
