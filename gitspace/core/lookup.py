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

from ..errors import BadArguments, NotFound
from ..storage import ids as shortids
from ..storage import ledger, opindex
from ..storage.gitrepo import GitRepo
from . import opnames, refnames
from .opnames import Found

MIN_PART = opnames.MIN_PART  # the fewest characters of an op id a person may type
_HEX = re.compile(r"[0-9a-fA-F]{4,40}")  # what git may read as an abbreviated object id
HINT = ("'gitspace log' lists ops (the last 8 characters of an op id are enough), "
        "'gitspace checkpoints' and 'gitspace branches' the names.")


def find_op(repo: GitRepo, op_id: str) -> Found | None:
    """Where op ``op_id`` is recorded, preferring the current branch; None when nowhere."""
    if not ledger.OP_ID.fullmatch(op_id):
        return None
    here = on_branch(repo, op_id)
    if here is not None:
        return Found(here.commit.sha, op_id, "commit", op=here.op)
    found = opnames.search(repo, (op_id, True), re.escape(op_id), op_id.__eq__, stop_at_first=True)
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
    ids = sorted({f.op_id for f in opnames.parts(repo, text) if f.op_id})
    if not ids:
        raise _missing(repo, text, "is not an op id, nor the start or end of one, on any branch.")
    if len(ids) > 1:
        raise _ambiguous(text, [f"op {i}" for i in ids])
    return ids[0]


def resolve(repo: GitRepo, text: str) -> Found:
    """The commit ``text`` names: an op id (or a unique part of one), a checkpoint (its name, or
    ``gitspace/NAME``), a branch or any git revision. Text that names two different commits (a
    checkpoint, say, and the op whose id ends with its name) is refused with both listed, never
    settled by picking one: whoever made the other name may have meant it to win."""
    if not _typeable(text):
        raise NotFound(f"{text[:80]!r} names nothing: it is empty, too long or holds control "
                       "characters.", hint=HINT)
    if ledger.OP_ID.fullmatch(text):
        found = find_op(repo, text)
        if found is None:
            raise NotFound(f"There is no op {text} on any branch.", hint=HINT)
        return found
    spelled = text.removeprefix("refs/tags/").removeprefix("gitspace/")
    if spelled != text and _valid("checkpoint", spelled):  # a checkpoint, said so
        target = repo.rev_parse(ledger.CHECKPOINTS + spelled)
        if target is not None:
            return Found(target, where="checkpoint", name=spelled)
    named = _named(repo, text)
    revision = repo.rev_parse(text) if not named else None
    if revision is not None and not _HEX.fullmatch(text):
        return Found(revision)  # a ref or an expression (HEAD~2, v1.0): never an op id
    candidates = _distinct_commits([*named, *opnames.parts(repo, text)])
    if revision is not None and all(f.commit != revision for f in candidates):
        candidates.append(Found(revision))
    if not candidates:
        raise _missing(repo, text, "is not a branch or revision here, nor a checkpoint or an op.")
    if len(candidates) > 1:
        raise _ambiguous(text, [f.describe() for f in candidates], named=bool(named))
    return candidates[0]


def _named(repo: GitRepo, text: str) -> list[Found]:
    """The checkpoint and the branch called ``text``, those that exist."""
    found = []
    if _valid("checkpoint", text):
        target = repo.rev_parse(ledger.CHECKPOINTS + text)
        if target is not None:
            found.append(Found(target, where="checkpoint", name=text))
    tip = repo.read_ref(f"refs/heads/{text}") if _valid("branch", text) else None
    if tip is not None:
        found.append(Found(tip, where="branch", name=text))
    return found


def _typeable(text: str) -> bool:
    """Could a person have typed ``text`` as a name? (Git gets nothing else to parse.)"""
    return 0 < len(text) <= 1000 and text.isprintable()


def _valid(kind: str, name: str) -> bool:
    """Is ``name`` a valid ``kind`` name (checkpoint, branch), so safe to look up as a ref?"""
    try:
        refnames.check(kind, name)
    except BadArguments:
        return False
    return True


def _distinct(found: list[Found]) -> list[Found]:
    """One entry per op id (the first, so the current branch's copy of an op wins)."""
    out: dict[str, Found] = {}
    for f in found:
        out.setdefault(f.op_id or f.commit, f)
    return list(out.values())


def _distinct_commits(found: list[Found]) -> list[Found]:
    """One entry per commit named (the first: a checkpoint or branch of that name before an op
    there), then one per op id: names of one commit agree on what they name."""
    out: dict[str, Found] = {}
    for f in _distinct(found):
        out.setdefault(f.commit, f)
    return list(out.values())


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


def _ambiguous(text: str, candidates: list[str], *, named: bool = False) -> BadArguments:
    shown = "; ".join(candidates[:10]) + (f"; and {len(candidates) - 10} more"
                                          if len(candidates) > 10 else "")
    hint = "Type more characters of the op id, or the whole of it."
    if named:
        hint = ("Name the op by its whole id ('gitspace log --format {op}' shows it), a "
                "checkpoint as gitspace/NAME, a branch as refs/heads/NAME.")
    return BadArguments(f"{text!r} could name {len(candidates)} things: {shown}.", hint=hint)
