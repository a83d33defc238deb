"""Where attribution comes from: the recorded calls, and the notes of commits a commit was made
from, each read as the versions of a file one after another with who wrote each line.

Invariants:
- A *version* is a file's lines and, for each, the key of who wrote it (None: not known). A
  *step* makes the next version from the one before: the lines it keeps keep their keys; the
  lines it brings are its writer's. Each op is an exact snapshot, so walking a line's ops in
  order is an exact blame: the call that last wrote a line is its author.
- Who a step's new lines are by (``Step.key``): an agent's call (source ``harness`` or ``tool``):
  its ``s_::t_`` key (its session: the harness's, else the agent's one conversation); the
  person's own edit (source ``external``) or call (no agent; or recorded under their own name,
  as ``undo`` and ``rewind`` in their checkout are): ``h_`` of the op commit's author, their git
  identity; a follow op (a checkout moving to a commit): not known. A step that takes work back
  (an undo, a redo, a rewind) restores lines: each gets the key it had in the newest earlier
  version that held it, and only a line none held is the step's own.
- A commit with a note (``Step.note``) brings what its note says of each line, and nothing for
  lines it does not attest. A commit that is neither an op nor noted brings lines of no one.
- The line of a checkout is read by one ``git log`` over the paths asked about, newest first,
  ending at the first commit that is no op (the person's history the line started from).
"""

from __future__ import annotations

from ..core.linerefs import FOLLOW
from ..errors import LedgerError
from ..storage import ledger
from ..storage.gitrepo import GitRepo
from ..storage.objects import EXEC_MODE, FILE_MODE, Entry
from ..storage.records import field, record
from . import authorship, matching

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

# git-ai's names for the harnesses gitspace records (its Agent ID ``tool``); gitspace's own
# agent loop and anything else is "gitspace" (its agent's name is in the trace record).
TOOLS = {"claude-code": "claude", "codex": "codex", "gemini-cli": "gemini", "cursor": "cursor"}
WALK = 20_000  # ops of a line read at most
SHORT = 48  # ops of a line read without starting git (a longer walk: git log)
FILE_CAP = 8 << 20  # bytes of a file attributed at most (bigger ones are left unattested)
RESTORE_DEPTH = 16  # earlier versions a restoring step looks back through
ZERO = "0" * 40
FILES = (FILE_MODE, EXEC_MODE)  # what has lines: a regular file (a link's target has none)


@record(frozen=True)
class NotedCall:
    """A recorded call that wrote lines, as a note describes it (names and ids, never text)."""

    key: str
    op_id: str
    tool: str
    agent: str
    session: str
    tool_use_id: str | None
    time: int
    commit: str


@record()
class Version:
    lines: list[bytes]
    keys: list[str | None]


@record(frozen=True)
class Step:
    """One change of a file: its new content (None: the file is gone), and who brought it."""

    blob: str | None
    key: str | None = None  # every line it brings is this key's
    restores: bool = False  # its lines come back from earlier versions
    note: dict[str, authorship.Ranges] | None = None  # a noted commit: what it attests


def harness_tool(agent: str) -> str:
    return TOOLS.get(agent, "gitspace")


def key_of(op: ledger.Op, author: str, commit: str, time: int
           ) -> tuple[str | None, bool, NotedCall | None]:
    """(key, restores, call) of an op whose commit is ``commit`` by ``author`` (``Name <email>``)."""
    if op.source == "external":
        if op.tool == FOLLOW:  # a checkout that moved to a commit, not an edit
            return None, False, None
        return authorship.human_key(author), False, None
    if op.source not in ("harness", "tool"):
        return None, False, None
    takeback = bool(op.undo_of or op.redo_of)
    if op.agent is None or _persons(op, author):  # an undo, a rewind, a call of the person's
        return authorship.human_key(author), True, None
    if takeback:
        return None, True, None
    agent = op.agent
    conversation = op.session or agent  # (a call with no session: the agent's one conversation)
    session = authorship.session_key(harness_tool(agent), conversation)
    key = authorship.call_key(session, authorship.trace_key(op.op_id))
    return key, False, NotedCall(key, op.op_id, op.tool, agent, conversation, op.tool_use_id, time,
                            commit)


def _persons(op: ledger.Op, author: str) -> bool:
    """Is a call recorded under the person's own name (``undo`` or ``rewind`` in their checkout):
    its agent trailer the token of its author, who is no ``NAME <NAME@gitspace>``?"""
    from ..core.person import token

    name, _, email = author.partition(" <")
    return not email.endswith("@gitspace>") and token(name) == op.agent


# -- versions ------------------------------------------------------------------------------

def lines_of(repo: GitRepo, blob: str | None) -> list[bytes] | None:
    """A blob's lines; None when it is no text gitspace attributes (binary, too large)."""
    if blob is None:
        return []
    data = repo.read_blob(blob)
    if len(data) > FILE_CAP or matching.is_binary(data):
        return None
    return matching.split(data)


def replay(repo: GitRepo, start: str | None, steps: Sequence[Step]) -> Version | None:
    """The version after ``steps`` from blob ``start`` (whose lines are no one's)."""
    first = lines_of(repo, start)
    if first is None:
        return None
    history = [Version(first, [None] * len(first))]
    for step in steps:
        lines = lines_of(repo, step.blob)
        if lines is None:
            return None
        history.append(_next(history, lines, step))
        del history[:-RESTORE_DEPTH]
    return history[-1]


def _next(history: list[Version], lines: list[bytes], step: Step) -> Version:
    prev = history[-1]
    kept = matching.match(prev.lines, lines)
    keys: list[str | None] = [prev.keys[i] if i >= 0 else None for i in kept]
    if step.restores:  # lines it brings back are whoever's they were
        for older in reversed(history[:-1]):
            gaps = [n for n, i in enumerate(kept) if i < 0 and keys[n] is None]
            if not gaps:
                break
            again = matching.match(older.lines, lines)
            for n in gaps:
                if again[n] >= 0:
                    keys[n] = older.keys[again[n]]
    keys = [k if k is not None or kept[n] >= 0 else step.key for n, k in enumerate(keys)]
    if step.note is not None:
        attested = authorship.keys_in(step.note, 1, len(lines))
        keys = [a if a is not None else k if kept[n] >= 0 else None
                for n, (a, k) in enumerate(zip(attested, keys, strict=True))]
    return Version(lines, keys)


# -- the line of a checkout ----------------------------------------------------------------

@record()
class History:
    """Per path: the blob before the first step, and the steps; the calls met on the way."""

    start: dict[str, str | None] = field(default_factory=dict)
    steps: dict[str, list[Step]] = field(default_factory=dict)
    calls: dict[str, NotedCall] = field(default_factory=dict)
    people: dict[str, str] = field(default_factory=dict)  # h_ key → the person's identity

    def met(self, key: str | None, call: NotedCall | None, author: str) -> None:
        if call is not None:
            self.calls[call.key] = call
        elif key is not None and key.startswith("h_"):
            self.people[key] = author


def line_history(repo: GitRepo, tip: str, paths: Iterable[str], exclude: str | None
                 ) -> History:
    """What the ops of the line at ``tip`` did to ``paths``, oldest first (``exclude``: a commit
    whose history is the person's, where the walk ends at the latest). A short line is read in
    this process (no git started: a commit's hook pays for every process); a long one by git."""
    wanted = sorted(set(paths))
    out = History()
    if not wanted:
        return out
    walked = _walk_here(repo, tip, wanted, exclude)
    if walked is not None:
        return walked
    refs = [tip] + ([f"^{exclude}"] if exclude else [])
    stdin = ("\n".join(refs) + "\n--\n" + "\n".join(wanted) + "\n").encode("utf-8",
                                                                           "surrogateescape")
    proc = repo.run_git("--literal-pathspecs", "log", "--stdin", "--first-parent", "-z", "--raw",
                        "--no-abbrev", "--no-renames", f"-n{WALK}",
                        "--format=%x01%H%x00%ct%x00%an <%ae>%x00%B", input=stdin)
    newest_first: dict[str, list[tuple[str | None, str | None, Step]]] = {}
    for chunk in proc.stdout.split(b"\x01")[1:]:
        parsed = _entry(chunk)
        if parsed is None:
            break  # the first commit that is no op: the person's history below the line
        op, commit, time, author, raw = parsed
        key, restores, call = key_of(op, author, commit, time)
        out.met(key, call, author)
        for path, old, new in raw:
            if path in wanted:
                step = Step(new, key, restores)
                newest_first.setdefault(path, []).append((old, new, step))
    for path, changes in newest_first.items():
        out.start[path] = changes[-1][0]
        out.steps[path] = [step for _, _, step in reversed(changes)]
    return out


def _walk_here(repo: GitRepo, tip: str, wanted: list[str], exclude: str | None
               ) -> History | None:
    """``line_history`` read commit by commit, for a line of at most ``SHORT`` ops (None:
    longer, left to git)."""
    out = History()
    newest_first: dict[str, list[tuple[str | None, str | None, Step]]] = {}
    open_paths = list(wanted)  # paths whose history goes on further back
    sha: str | None = tip
    for _ in range(SHORT):
        if sha is None or sha == exclude or not open_paths:
            break
        commit = repo.commit(sha)
        op = ledger.op_or_none(commit.message)
        if op is None:
            break
        author = commit.author.rsplit(" ", 2)[0]
        key, restores, call = key_of(op, author, sha, commit.time)
        out.met(key, call, author)
        before = repo.commit(commit.parents[0]).tree if commit.parents else None
        for path in list(open_paths):
            old, new = (_blob(repo.entry_at(before, path)) if before else None,
                        _blob(repo.entry_at(commit.tree, path)))
            if old != new:
                newest_first.setdefault(path, []).append((old, new, Step(new, key, restores)))
                if old is None:  # the op that made it: nothing older is this file's
                    open_paths.remove(path)
        sha = commit.parents[0] if commit.parents else None
    else:
        return None
    for path, changes in newest_first.items():
        out.start[path] = changes[-1][0]
        out.steps[path] = [step for _, _, step in reversed(changes)]
    return out


def _blob(entry: Entry | None) -> str | None:
    return entry.sha if entry is not None and entry.mode in FILES else None


def _entry(chunk: bytes) -> tuple[ledger.Op, str, int, str, list[tuple[str, str | None,
                                                                       str | None]]] | None:
    try:
        commit, time, author, rest = chunk.split(b"\0", 3)
        body, _, raw = rest.partition(b"\0")
        op = ledger.parse_message(body.decode("utf-8", "replace"))
    except (ValueError, LedgerError):
        return None
    if op is None:
        return None
    fields = raw.strip(b"\n").split(b"\0")
    changes = []
    for i in range(0, len(fields) - 1, 2):
        meta, path = fields[i].split(), fields[i + 1]
        if len(meta) >= 5:
            changes.append((path.decode("utf-8", "surrogateescape"), _text(meta[0], meta[2]),
                            _text(meta[1], meta[3])))
    return op, commit.decode(), int(time or 0), author.decode("utf-8", "replace"), changes


def _text(mode: bytes, sha: bytes) -> str | None:
    """The blob of a raw diff side when it is a file's (a link, a submodule, none: None)."""
    return sha.decode() if mode.lstrip(b":") in (b"100644", b"100755") and sha.decode() != ZERO \
        else None


# -- commits a commit was made from --------------------------------------------------------

def commit_steps(repo: GitRepo, commits: Sequence[str], paths: Iterable[str],
                 note_of: Callable[[str], authorship.Note | None]) -> History:
    """What ``commits`` (oldest first: the ones squashed, rebased or picked) did to ``paths``,
    each a step keyed by its note, or by its op when it is one."""
    wanted = set(paths)
    out = History()
    for sha in commits:
        commit = repo.commit(sha)
        parent = repo.commit(commit.parents[0]).tree if commit.parents else None
        note = note_of(sha)
        op = ledger.op_or_none(commit.message)
        author = commit.author.rsplit(" ", 2)[0]
        key, restores, call = (None, False, None) if op is None else key_of(
            op, author, sha, commit.time)
        out.met(key, call, author)
        for change in repo.diff_trees(parent, commit.tree):
            if change.path not in wanted or change.new is not None and change.new.is_tree:
                continue
            new = change.new.sha if change.new is not None and change.new.mode in FILES else None
            attested = note.files.get(change.path, {}) if note is not None else None
            step = Step(new, key, restores, attested)
            if change.path not in out.steps:
                out.start[change.path] = change.old.sha if change.old is not None and \
                    change.old.mode in FILES else None
            out.steps.setdefault(change.path, []).append(step)
    return out
