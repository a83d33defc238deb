"""Which recorded ops a piece of text names: the one search of op ids by their parts.

An op id is recorded in three places: the commit an op made (on a branch, or on a line recorded
in place), the tag of the checkpoint a ``checkpoint`` call created (its ``Gitspace-Op``), and the
first reflog entry of the branch a ``branch`` call created. ``search`` looks in all three for ops
whose id is, starts or ends with a text (``gitspace log`` shows the last eight characters);
``named_by`` is that search for a name someone gives a ref (with ``incoming``, the ops a pull
brings), so that the resolver
(``lookup.resolve``) and the naming rule (``refnames``: checkpoints, branches, what a pull takes)
ask one question the same way.

Invariants: nothing here writes (the op index is a rebuildable cache beside the repository); an
op id counts only where the ledger parses it (git's ``--grep`` narrows the search, the trailer
parser decides), so a quoted trailer in a result or a body never matches; commits on the current
branch come first, then other branches, then checkpoints, then created branches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ..errors import LedgerError
from ..storage import ledger, opindex
from ..storage.gitrepo import GitRepo
from ..storage.records import record
from . import linerefs

MIN_PART = 4  # the fewest characters of an op id a person may type
PART = re.compile(rf"[0-9A-HJKMNP-TV-Z]{{{MIN_PART},25}}")  # Crockford base32, as op ids are


@record(frozen=True)
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
            return f"{what} ({'created ' if self.op_id else ''}branch {self.name})"
        return what if self.op_id else f"{what} (a revision)"


def parts(repo: GitRepo, text: str) -> list[Found]:
    """Every recorded op whose id starts or ends with ``text`` (case ignored)."""
    part = text.upper()
    if not PART.fullmatch(part):
        return []
    return search(repo, (part, False), _pattern(part),
                  lambda found: found.startswith(part) or found.endswith(part))


def named_by(repo: GitRepo, name: str, incoming: Iterable[str] = ()) -> list[str]:
    """The op ids ``name`` reads as: an op id's whole form, or the start or end (case ignored)
    of an op recorded here or of one of ``incoming`` (ops a pull brings, on no ref here yet)."""
    part = name.upper()
    if ledger.OP_ID.fullmatch(part):
        return [part]  # an op id, whether or not one was made here yet
    if not PART.fullmatch(part):
        return []
    ids = {f.op_id for f in parts(repo, name) if f.op_id}
    ids |= {i for i in incoming if i.startswith(part) or i.endswith(part)}
    return sorted(ids)


def incoming(repo: GitRepo, tips: Iterable[str]) -> set[str]:
    """The op ids recorded in the history of ``tips`` (commits or tags) outside every branch,
    tag and line here: what a pull or a sync brings. One git process, over the new commits."""
    wanted = sorted(set(tips))
    if not wanted:
        return set()
    out = repo.git("log", "-z", "--format=%B", "-E", "--grep=^Gitspace-Op: ", *wanted, "--not",
                   "--branches", "--tags", f"--glob={linerefs.ROOT}*", "--")
    ids = set()
    for message in out.decode(errors="surrogateescape").split("\0"):
        op = parsed(message.lstrip("\n"))
        if op is not None:
            ids.add(op.op_id)
    return ids


def _pattern(part: str) -> str:
    return f"({part}[0-9A-Z]*|[0-9A-Z]*{part})"


def search(repo: GitRepo, part: tuple[str, bool], pattern: str, accept: Callable[[str], bool],
           *, stop_at_first: bool = False) -> list[Found]:
    """Ops whose id is, starts or ends with ``part`` (text, and whether it must be the whole id)
    for the op index, matches ``pattern`` (the same as an extended regex) for git's ``--grep``,
    and satisfies ``accept``: their commits on the current branch, then on other branches, then
    checkpoints, then created branches."""
    heads = repo.refs("refs/heads")  # (ref, tip, peeled): read once for both uses
    found = _committed(repo, heads, part, pattern, accept, stop_at_first)
    if found and stop_at_first:
        return found
    for ref, _, target, _, message in repo.tags(ledger.CHECKPOINTS.rstrip("/")):
        note = _checkpoint(message)
        if note is not None and note.op_id is not None and accept(note.op_id):
            found.append(Found(target, note.op_id, "checkpoint", ref[len(ledger.CHECKPOINTS):]))
    for ref, _, _ in heads:
        first = repo.first_reflog(ref)
        recorded = ledger.parse_branch_note(first[1]) if first else None
        if first is not None and recorded is not None and accept(recorded):
            found.append(Found(first[0], recorded, "branch", ref[len("refs/heads/"):]))
    return found


def _committed(repo: GitRepo, heads: list[tuple[str, str, str]], part: tuple[str, bool], pattern: str,
               accept: Callable[[str], bool], stop_at_first: bool) -> list[Found]:
    """The op commits of ``search``: from the op index, which covers the history of every
    branch in ``heads`` (so what a search costs does not grow with it), or, with HEAD detached or
    no index to be had, from git's walk of HEAD and every branch."""
    current = repo.head_branch()
    tips = {ref[len("refs/heads/"):]: sha for ref, sha, _ in heads}
    # Lines recorded in place (core/linerefs.py), named by their full ref: the current branch's
    # line first, then the current branch, then the other lines and branches.
    lines = dict(linerefs.lines(repo))
    mine = linerefs.ref_for(current) if current is not None else None  # (detached: walked below)
    if current is not None and current in tips:
        here = {mine: lines.pop(mine)} if mine in lines else {}
        ordered = {**here, current: tips.pop(current), **lines, **tips}
        hits = opindex.search(repo, ordered, *part)
        if hits is not None:
            return _distinct_commits(Found(h.commit.sha, h.op.op_id, "commit", op=h.op)
                                     for h in hits if accept(h.op.op_id))
    found: list[Found] = []
    seen: set[str] = set()
    for rev in ("HEAD", "--branches", f"--glob={linerefs.ROOT}*"):
        for commit in repo.log(rev, first_parent=False, grep=f"^Gitspace-Op: {pattern}$"):
            if commit.sha in seen:
                continue
            seen.add(commit.sha)
            op = parsed(commit.message)
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


def parsed(message: str) -> ledger.Op | None:
    """The op ``message`` records; None for a plain commit and for a malformed block, which
    records no op (``verify`` reports it)."""
    try:
        return ledger.parse_message(message)
    except LedgerError:
        return None


def _checkpoint(message: str) -> ledger.CheckpointNote | None:
    try:
        return ledger.parse_checkpoint(message)
    except LedgerError:
        return None
