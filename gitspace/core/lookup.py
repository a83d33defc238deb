"""Finding an op, or whatever a person typed, wherever the ledger records it: the one finder.

An op is recorded in one of three places: the commit it made (on any branch), the tag of the
checkpoint a ``checkpoint`` call created (its ``Gitspace-Op``), or the first reflog entry of the
branch a ``branch`` call created. ``find_op`` looks in all three. ``resolve`` turns what a person
types into a commit: a full op id, a unique prefix or suffix of one (``gitspace log`` shows the
last eight characters), a checkpoint name, a branch, or any git revision; ``op_id`` accepts only
op ids and their parts. An op on the current branch's first-parent line is found through the op
index (``storage.opindex``, derived from the ledger), so the common lookup costs the same at
100,000 ops as at 100; everything else is searched.

Invariants: nothing here writes to the repository (the op index is a rebuildable cache beside
it), and it reads through a ``GitRepo`` alone (no workspace is
opened, so readers beside writers, like the web view, use it too). An op id counts only where
the ledger parses it (git's ``--grep`` narrows the search, the trailer parser decides), so a
quoted trailer in a result or a body never matches. Commits on the current branch come before
those on other branches. Text that could name two things is refused with every candidate
listed; a miss is NotFound with a hint, never git's own "bad revision".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import BadArguments, LedgerError, NotFound
from ..storage import ids as shortids
from ..storage import ledger, opindex
from ..storage.gitrepo import GitRepo
from . import branches, checkpoints, line

MIN_PART = 4  # the fewest characters of an op id a person may type
_PART = re.compile(rf"[0-9A-HJKMNP-TV-Z]{{{MIN_PART},25}}")  # Crockford base32, as op ids are
_HEX = re.compile(r"[0-9a-fA-F]{4,40}")  # what git may read as an abbreviated object id
HINT = ("'gitspace log' lists ops (the last 8 characters of an op id are enough), "
        "'gitspace checkpoints' and 'gitspace branches' the names.")


@dataclass(frozen=True)
class Found:
    """Where something was found: always a commit, and the op when it is one."""

    commit: str
    op_id: str | None = None
    where: str = "revision"  # commit (an op's own commit), checkpoint, branch or revision
    name: str | None = None  # the checkpoint or branch, when found there
    op: ledger.Op | None = None  # the op record, when ``commit`` is the op's commit

    def describe(self) -> str:
        what = f"op {self.op_id}" if self.op_id else f"commit {self.commit[:12]}"
        if self.where == "checkpoint":
            return f"{what} (checkpoint {self.name})"
        if self.where == "branch":
            return f"{what} (created branch {self.name})"
        return what if self.op_id else f"{what} (a revision)"


def find_op(repo: GitRepo, op_id: str) -> Found | None:
    """Where op ``op_id`` is recorded, preferring the current branch; None when nowhere."""
    if not ledger.OP_ID.fullmatch(op_id):
        return None
    here = on_branch(repo, op_id)
    if here is not None:
        return Found(here.commit.sha, op_id, "commit", op=here.op)
    found = _search(repo, (op_id, True), re.escape(op_id), op_id.__eq__, stop_at_first=True)
    return found[0] if found else None


def on_branch(repo: GitRepo, op_id: str, branch: str | None = None) -> opindex.Located | None:
    """Op ``op_id`` on the first-parent line of ``branch`` (default: the current one) and the
    later ops there that undid it, through the op index: what it costs does not grow with the
    branch's length. None when it is not there (or HEAD is detached)."""
    branch = branch or repo.head_branch()
    tip = repo.read_ref(f"refs/heads/{branch}") if branch else None
    if branch is None or tip is None or not ledger.OP_ID.fullmatch(op_id):
        return None
    return opindex.locate(repo, branch, tip, op_id)


def op_id(repo: GitRepo, text: str) -> str:
    """The op id ``text`` is, or is the unique prefix or suffix of (on any branch)."""
    if ledger.OP_ID.fullmatch(text):
        if find_op(repo, text) is None:
            raise NotFound(f"There is no op {text} on any branch.", hint=HINT)
        return text
    ids = sorted({f.op_id for f in _parts(repo, text) if f.op_id})
    if not ids:
        raise _missing(repo, text, "is not an op id, nor the start or end of one, on any branch.")
    if len(ids) > 1:
        raise _ambiguous(text, [f"op {i}" for i in ids])
    return ids[0]


def resolve(repo: GitRepo, text: str) -> Found:
    """The commit ``text`` names: an op id (or a unique part of one), a checkpoint, a branch or
    any git revision."""
    if not _typeable(text):
        raise NotFound(f"{text[:80]!r} names nothing: it is empty, too long or holds control "
                       "characters.", hint=HINT)
    if ledger.OP_ID.fullmatch(text):
        found = find_op(repo, text)
        if found is None:
            raise NotFound(f"There is no op {text} on any branch.", hint=HINT)
        return found
    if _valid(checkpoints.check_name, text):
        target = repo.rev_parse(checkpoints.PREFIX + text)
        if target is not None:
            return Found(target, where="checkpoint", name=text)
    tip = repo.read_ref(f"refs/heads/{text}") if _valid(branches.check_name, text) else None
    if tip is not None:
        return Found(tip, where="branch", name=text)
    revision = repo.rev_parse(text)
    if revision is not None and not _HEX.fullmatch(text):
        return Found(revision)  # a ref or an expression (HEAD~2, v1.0): never an op id
    candidates = _distinct(_parts(repo, text))
    if revision is not None and all(f.commit != revision for f in candidates):
        candidates.append(Found(revision))
    if not candidates:
        raise _missing(repo, text, "is not a branch or revision here, nor a checkpoint or an op.")
    if len(candidates) > 1:
        raise _ambiguous(text, [f.describe() for f in candidates])
    return candidates[0]


def _parts(repo: GitRepo, text: str) -> list[Found]:
    """Every recorded op whose id starts or ends with ``text`` (case ignored)."""
    part = text.upper()
    if not _PART.fullmatch(part):
        return []
    return _search(repo, (part, False), f"({part}[0-9A-Z]*|[0-9A-Z]*{part})",
                   lambda found: found.startswith(part) or found.endswith(part))


def _search(repo: GitRepo, part: tuple[str, bool], pattern: str, accept: Callable[[str], bool],
            *, stop_at_first: bool = False) -> list[Found]:
    """Ops whose id is, starts or ends with ``part`` (text, and whether it must be the whole id)
    for the op index, matches ``pattern`` (the same as an extended regex) for git's ``--grep``,
    and satisfies ``accept``: their commits on the current branch, then on other branches, then
    checkpoints, then created branches."""
    heads = repo.refs("refs/heads")  # (ref, tip, peeled): read once for both uses
    found = _committed(repo, heads, part, pattern, accept, stop_at_first)
    if found and stop_at_first:
        return found
    for ref, _, target, _, message in repo.tags(checkpoints.PREFIX.rstrip("/")):
        note = _checkpoint(message)
        if note is not None and note.op_id is not None and accept(note.op_id):
            found.append(Found(target, note.op_id, "checkpoint", ref[len(checkpoints.PREFIX):]))
    for ref, _, _ in heads:
        first = repo.first_reflog(ref)
        recorded = ledger.parse_branch_note(first[1]) if first else None
        if first is not None and recorded is not None and accept(recorded):
            found.append(Found(first[0], recorded, "branch", ref[len("refs/heads/"):]))
    return found


def _committed(repo: GitRepo, heads: list[tuple[str, str, str]], part: tuple[str, bool], pattern: str,
               accept: Callable[[str], bool], stop_at_first: bool) -> list[Found]:
    """The op commits of ``_search``: from the op index, which covers the history of every
    branch in ``heads`` (so what a search costs does not grow with it), or, with HEAD detached or
    no index to be had, from git's walk of HEAD and every branch."""
    current = repo.head_branch()
    tips = {ref[len("refs/heads/"):]: sha for ref, sha, _ in heads}
    # Lines recorded in place (core/line.py), named by their full ref: the current branch's
    # line first, then the current branch, then the other lines and branches.
    lines = dict(line.lines(repo))
    mine = line.ref_for(current) if current is not None else None  # (detached: walked below)
    if current is not None and current in tips:
        here = {mine: lines.pop(mine)} if mine in lines else {}
        ordered = {**here, current: tips.pop(current), **lines, **tips}
        hits = opindex.search(repo, ordered, *part)
        if hits is not None:
            return _distinct_commits(Found(h.commit.sha, h.op.op_id, "commit", op=h.op)
                                     for h in hits if accept(h.op.op_id))
    found: list[Found] = []
    seen: set[str] = set()
    for rev in ("HEAD", "--branches", f"--glob={line.ROOT}*"):
        for commit in repo.log(rev, first_parent=False, grep=f"^Gitspace-Op: {pattern}$"):
            if commit.sha in seen:
                continue
            seen.add(commit.sha)
            op = _parsed(commit.message)
            if op is not None and accept(op.op_id):
                found.append(Found(commit.sha, op.op_id, "commit", op=op))
        if found and stop_at_first:
            break
    return found


def _distinct_commits(found: Iterable[Found]) -> list[Found]:
    out: dict[str, Found] = {}
    for f in found:
        out.setdefault(f.commit, f)
    return list(out.values())


def _typeable(text: str) -> bool:
    """Could a person have typed ``text`` as a name? (Git gets nothing else to parse.)"""
    return 0 < len(text) <= 1000 and text.isprintable()


def _valid(check: Callable[[str], str], name: str) -> bool:
    """Is ``name`` one ``check`` accepts (so it is safe to look up as a ref)?"""
    try:
        check(name)
    except BadArguments:
        return False
    return True


def _distinct(found: list[Found]) -> list[Found]:
    """One entry per op id (the first, so the current branch's copy of an op wins)."""
    out: dict[str, Found] = {}
    for f in found:
        out.setdefault(f.op_id or f.commit, f)
    return list(out.values())


def _parsed(message: str) -> ledger.Op | None:
    try:
        return ledger.parse_message(message)
    except LedgerError:
        return None  # a malformed block records no op (verify reports it)


def _checkpoint(message: str) -> ledger.CheckpointNote | None:
    try:
        return ledger.parse_checkpoint(message)
    except LedgerError:
        return None


def _missing(repo: GitRepo, text: str, what: str) -> NotFound:
    """Nothing ``text`` names is where an op was expected: say so, and say when it names a
    session instead (its short form, ``s-...``, is what people copy from a listing)."""
    named = sessions_named(repo, text)
    if len(named) == 1:
        short = shortids.session(named[0])
        return NotFound(f"{text!r} is session {short} ({named[0]}), not an op.",
                        hint=f"'gitspace log --session {short}' lists its ops; pick one of them "
                             "(the 8 characters log shows).")
    return NotFound(f"{text!r} {what}", hint=HINT)


def sessions_named(repo: GitRepo, text: str) -> list[str]:
    """The sessions whose ops the ledger records (on any ref) that ``text`` could name, in any
    of a session id's forms (``storage/ids.py``)."""
    part = shortids.session_part(text)
    if len(part) < MIN_PART or not ledger.TOKEN.fullmatch(part):
        return []
    body = part.rsplit("-", 1)[-1]
    literal = [re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", t) for t in (part, body)]
    out = repo.read_git("log", "--all", "-E", f"--grep=^Gitspace-Session: .*({'|'.join(literal)})",
                        "--format=%(trailers:key=Gitspace-Session,"
                        "valueonly,unfold)", check=False).decode("utf-8", "replace")
    return sorted({s for s in out.split() if shortids.names_session(text, s)})


def _ambiguous(text: str, candidates: list[str]) -> BadArguments:
    shown = "; ".join(candidates[:10]) + (f"; and {len(candidates) - 10} more"
                                          if len(candidates) > 10 else "")
    return BadArguments(f"{text!r} could name {len(candidates)} things: {shown}.",
                        hint="Type more characters of the op id, or the whole of it.")
