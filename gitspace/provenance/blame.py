"""``gitspace blame PATH [REV]``: for each line, the agent call or the person that wrote it.

Invariants:
- ``git blame`` says which commit brought each line and where that line was then; that
  commit's note (``refs/notes/ai``, gitspace's or any compliant tool's) says who wrote it. A
  commit that is itself an op (a workspace's) says it with its trailers. A line of a commit
  with neither is its author's, as git says (``source`` ``git``).
- Without REV the work tree is blamed: a line not committed yet is looked up in the checkout's
  line (the calls recorded since), else it is the person's.
- Everything shown comes from the notes and the commits, so a clone that never recorded
  anything shows the same; the prompt of a call is added only where its transcript is local
  (``sessions.Transcripts``), redacted.
"""

from __future__ import annotations

from collections import namedtuple
from itertools import groupby

from ..core.linerefs import ref_for
from ..errors import GitspaceError, NotFound
from ..storage import ledger
from ..storage.gitnames import unquoted_path
from ..storage.gitrepo import GitRepo
from ..storage.records import record
from . import authorship, matching, sources
from .notes import Notes

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess

    from .sessions import Transcripts

UNCOMMITTED = "0" * 40


@record()
class Line:
    line: int
    text: str
    commit: str
    kind: str  # "agent" or "person"
    author: str  # the agent (harness) or the person's name
    harness: str | None  # the tool of the Git AI Standard's agent id ("claude")
    session: str | None
    op: str | None  # the op's short id
    tool: str | None
    time: int | None
    model: str | None
    prompt: str | None
    key: str | None
    source: str  # "note", "op", "line" (recorded, not committed yet) or "git"

    def as_json(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in FIELDS}


FIELDS = ["line", "text", "commit", "kind", "author", "harness", "session", "op", "tool", "time",
          "model", "prompt", "key", "source"]


# Where a line came from: commit, its line there, its path there, its author and time (a tuple:
# a record's __init__ is paid once per line where a file has no groups, untracked).
_Origin = namedtuple("_Origin", ["commit", "line", "path", "author", "time"])


@record(frozen=True)
class _Hunk:
    """Lines ``final`` to ``final + len(texts) - 1`` of the file, from lines ``orig`` on of
    ``path`` in ``commit``."""

    commit: str
    orig: int
    final: int
    path: str
    author: str
    time: int
    texts: list[str]

    def origin(self, k: int) -> _Origin:
        return _Origin(self.commit, self.orig + k, self.path, self.author, self.time)


def blame(repo: GitRepo, path: str, rev: str | None = None,
          transcripts: Transcripts | None = None,
          started: subprocess.Popen[bytes] | None = None) -> list[Line]:
    """Each line of ``path`` at ``rev`` (None: the work tree). ``started``: its ``git blame``,
    begun by the caller (``GitRepo.start_blame``) before it loaded this module."""
    proc = started if started is not None else repo.start_blame(path, rev)
    notes = Notes(repo)  # (while git works)
    stdout, stderr = proc.communicate()
    if proc.returncode != 0 and rev is None and not repo.run_git(
            "ls-files", "--error-unmatch", "--", path).returncode == 0:
        return _untracked(repo, path, transcripts)
    if proc.returncode != 0:
        text = stderr.decode(errors="replace").strip()
        raise NotFound(f"git blame cannot blame {path}{' at ' + rev if rev else ''}: {text}",
                       hint="Name a file the revision holds (paths are relative to the work "
                            "tree's top).")
    hunks = _porcelain(stdout)
    uncommitted = _uncommitted(repo, path, [text for h in hunks for text in h.texts]) if any(
        h.commit == UNCOMMITTED for h in hunks) else {}
    out: list[Line] = []
    seen: dict[tuple[str, str | None], dict[str, object]] = {}  # (commit, key) → its fields
    for hunk in hunks:
        if hunk.commit == UNCOMMITTED:  # (each line looked up in the line on its own)
            out += [_line(repo, notes, hunk.final + k, hunk.origin(k), text, uncommitted,
                          transcripts) for k, text in enumerate(hunk.texts)]
            continue
        note = notes.get(hunk.commit)
        keys = authorship.keys_in(note.files.get(hunk.path, {}), hunk.orig, len(hunk.texts)) \
            if note is not None else [None] * len(hunk.texts)
        k = 0
        for key, run in groupby(keys):  # (a run of lines of one key: one group's fields)
            end = k + sum(1 for _ in run)
            known = seen.get((hunk.commit, key))
            if known is None:
                found = _line(repo, notes, hunk.final + k, hunk.origin(k), hunk.texts[k],
                              uncommitted, transcripts)
                known = seen[hunk.commit, key] = {name: getattr(found, name)
                                                  for name in FIELDS[2:]}
                out.append(found)
                k += 1
            _again(out, hunk.final + k, hunk.texts[k:end], known)
            k = end
    return out


def _again(out: list[Line], first: int, texts: list[str], known: dict[str, object]) -> None:
    """Lines ``first`` on, of a group met before: each a copy of the group's fields
    (``Line(...)`` sets each of them by a call of its own: most of a long file's blame, where
    almost every line is such a one)."""
    new = object.__new__
    for number, text in enumerate(texts, first):
        line: Line = new(Line)
        fields = known.copy()
        fields["line"], fields["text"] = number, text
        line.__dict__ = fields
        out.append(line)


def _untracked(repo: GitRepo, path: str, transcripts: Transcripts | None) -> list[Line]:
    """A file git does not track yet: every line uncommitted, looked up in the line."""
    from ..storage import bounded

    try:
        data = bounded.read_inside(repo.root, path, sources.FILE_CAP, what="The file")
    except (OSError, GitspaceError) as e:
        raise NotFound(f"{path} cannot be blamed: {e}.", hint="Name a file of the work tree.") \
            from None
    if data is None:
        raise NotFound(f"There is no file {path} in the work tree.",
                       hint="Name a file of the work tree (relative to its top), or give REV.")
    texts = [t.decode("utf-8", "surrogateescape") for t in matching.split(data)]
    origins = [_Origin(UNCOMMITTED, n, path, "Not Committed Yet", 0) for n in
               range(1, len(texts) + 1)]
    notes = Notes(repo)
    found = _uncommitted(repo, path, texts)
    return [_line(repo, notes, n, o, t, found, transcripts)
            for n, (o, t) in enumerate(zip(origins, texts, strict=True), 1)]


def _porcelain(data: bytes) -> list[_Hunk]:
    """The hunks of ``git blame --porcelain``, in the file's order. A hunk's first line is a
    header ``SHA ORIG FINAL COUNT``, the fields of its commit (all of them the first time the
    commit is named; ``filename`` always), and its text after a tab; each of its other lines a
    header ``SHA ORIG FINAL`` and its text: those are taken as one slice, never parsed. Decoded
    at once: a byte sequence of UTF-8 never spans a line break."""
    rows = data.decode("utf-8", "surrogateescape").split("\n")
    if rows and not rows[-1]:
        rows.pop()
    hunks: list[_Hunk] = []
    known: dict[str, dict[str, str]] = {}
    i, end = 0, len(rows)
    while i < end:
        head = rows[i].split(" ")
        if len(head) != 4 or len(head[0]) != 40 or not all(h.isdigit() for h in head[1:]):
            raise _unreadable(rows[i])
        sha, orig, final, count = head[0], int(head[1]), int(head[2]), int(head[3])
        fields = known.setdefault(sha, {})
        i += 1
        while i < end and rows[i][:1] != "\t":
            name, _, value = rows[i].partition(" ")
            fields[name] = value
            i += 1
        rest = rows[i + 1:i + 2 * count - 1]  # (the other lines: header, text, header, ...)
        texts = rows[i:i + 2 * count - 1:2]
        if count < 1 or len(texts) != count or not all(t[:1] == "\t" for t in texts) or \
                not all(r.startswith(sha) for r in rest[::2]):
            raise _unreadable(rows[i] if i < end else "")
        hunks.append(_Hunk(sha, orig, final, unquoted_path(fields.get("filename", "")),
                           fields.get("author", ""), int(fields.get("author-time", "0") or 0),
                           [t[1:] for t in texts]))
        i += 2 * count - 1
    hunks.sort(key=lambda h: h.final)
    return hunks


def _unreadable(row: str) -> GitspaceError:
    return GitspaceError(f"git blame printed what gitspace cannot read ({row[:80]!r}).",
                         hint="Report it with your git version (git --version).")


def _line(repo: GitRepo, notes: Notes, number: int, origin: _Origin, text: str,
          uncommitted: dict[int, tuple[str, sources.NotedCall | None, str | None]],
          transcripts: Transcripts | None) -> Line:
    person = Line(number, text, origin.commit, "person", origin.author, None, None, None, None,
                  origin.time, None, None, None, "git")
    if origin.commit == UNCOMMITTED:
        found = uncommitted.get(number)
        if found is None:
            return person
        key, call, who = found
        if call is None:
            person.author, person.key, person.source = who or person.author, key, "line"
            return person
        return _call(number, text, origin.commit, key, call, transcripts, "line")
    note = notes.get(origin.commit)
    if note is not None:
        noted = note.key_at(origin.path, origin.line)
        if noted is not None:
            return _from_note(number, text, origin, noted, note, transcripts)
        return person
    commit = repo.commit(origin.commit)
    op = ledger.op_or_none(commit.message)
    if op is not None:
        _, _, call = sources.key_of(op, commit.author.rsplit(" ", 2)[0], commit.sha,
                                    commit.time)
        if call is not None:
            return _call(number, text, origin.commit, call.key, call, transcripts, "op")
    return person


def _from_note(number: int, text: str, origin: _Origin, key: str, note: authorship.Note,
               transcripts: Transcripts | None) -> Line:
    record_ = note.record_of(key) or {}
    head, trace = authorship.split_key(key)
    if authorship.kind_of(key) == "person":
        who = record_.get("author")
        name: str = who.split(" <", 1)[0] if isinstance(who, str) else origin.author
        return Line(number, text, origin.commit, "person", name, None, None, None, None,
                    origin.time, None, None, key, "note")
    agent_id = record_.get("agent_id") if isinstance(record_.get("agent_id"), dict) else {}
    assert isinstance(agent_id, dict)
    traced = note.traces.get(trace or "", {})
    session = _text(traced.get("session")) or _text(agent_id.get("id"))
    agent: str = _text(traced.get("agent")) or _text(agent_id.get("tool")) or "agent"
    op = _text(traced.get("op"))
    prompt = None
    if transcripts is not None and session and op:
        prompt = transcripts.prompt(agent, session, _text(traced.get("tool_use_id")))
    when = traced.get("time")
    return Line(number, text, origin.commit, "agent", agent, _text(agent_id.get("tool")),
                session, ledger.short_id(op) if op and ledger.OP_ID.fullmatch(op) else op,
                _text(traced.get("tool")), when if isinstance(when, int) else origin.time,
                _text(agent_id.get("model")), prompt, key, "note")


def _call(number: int, text: str, commit: str, key: str, call: sources.NotedCall,
          transcripts: Transcripts | None, source: str) -> Line:
    prompt = transcripts.prompt(call.agent, call.session, call.tool_use_id) \
        if transcripts is not None else None
    model = transcripts.model(call.agent, call.session) if transcripts is not None else None
    return Line(number, text, commit, "agent", call.agent, sources.harness_tool(call.agent),
                call.session, ledger.short_id(call.op_id), call.tool, call.time, model, prompt,
                key, source)


def _uncommitted(repo: GitRepo, path: str, texts: list[str]
                 ) -> dict[int, tuple[str, sources.NotedCall | None, str | None]]:
    """For the work tree's lines: the key the line's recorded calls give each (1-based)."""
    tip = repo.read_ref(ref_for(repo.head_branch(), repo.gitdir))
    if tip is None:
        return {}
    head = repo.read_ref("HEAD")
    history = sources.line_history(repo, tip, [path], head)
    if path not in history.steps:
        return {}
    version = sources.replay(repo, history.start.get(path), history.steps[path])
    if version is None:
        return {}
    lines = [t.encode("utf-8", "surrogateescape") for t in texts]
    out: dict[int, tuple[str, sources.NotedCall | None, str | None]] = {}
    for n, i in enumerate(matching.match(version.lines, lines), 1):
        key = version.keys[i] if i >= 0 else None
        if key is not None:
            out[n] = (key, history.calls.get(key), history.people.get(key, "").split(" <")[0])
    return out


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


