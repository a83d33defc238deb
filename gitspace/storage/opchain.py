"""Where an op stands: each op names the op before it on its branch or line (``Gitspace-After``).

Invariant: ``message`` is how every builder of an op commit writes its message (a tool's op, an
outside edit, a harness's call, a follow op in a person's checkout), so every op of ledger format
4 names the op its commit's first parent records, and none where that parent records no op (a
person's commit, a merge, no parent at all). ``misplaced`` reads that back: an op whose first
parent records another op than it names, or records one where it named none, no longer stands
where it was made. That is what a dropped op (``git rebase --onto X~1 X``), a copied one (a
cherry-pick) and a reordered pair leave, each at the first op after the change, and ``replay``
and ``verify`` report it there. An op of an older format names nothing and is not checked.

Nothing is signed: whoever rewrites history can rewrite these trailers too. What they catch is a
history that lost, gained or reordered ops while keeping the ops' own records, as every git
rebase, cherry-pick and drop does.
"""

from __future__ import annotations

from ..errors import LedgerError
from . import ledger
from .records import replace

TYPE_CHECKING = False  # (typing is not imported at run time: a hook's path builds messages here)
if TYPE_CHECKING:
    from .gitrepo import GitRepo
    from .objects import Commit


def before(repo: GitRepo, parent: str | None) -> str | None:
    """The op id commit ``parent`` records (None for no parent, a plain commit, a merge, or a
    block that does not parse: nothing stands there to name)."""
    if parent is None:
        return None
    commit = repo.commit(parent)
    if len(commit.parents) > 1:
        return None
    try:
        op = ledger.parse_message(commit.message)
    except LedgerError:
        return None
    return op.op_id if op is not None else None


def message(repo: GitRepo, parent: str | None, op: ledger.Op, subject: str,
            body: str = "") -> str:
    """The commit message of ``op``, to be committed on ``parent``: ``ledger.encode_message``,
    naming the op ``parent`` records (in a format that records it: an op written back in an
    older one names nothing)."""
    if "Gitspace-After" in ledger.FORMATS[op.version()].keys:
        op = replace(op, after=before(repo, parent))
    return ledger.encode_message(op, subject, body)


def misplaced(repo: GitRepo, commit: Commit, op: ledger.Op) -> str | None:
    """Why ``op`` (recorded by ``commit``) does not stand where it was made, in a sentence; None
    when it does, or when its format does not say (formats before 4)."""
    if op.format is None or "Gitspace-After" not in ledger.FORMATS[op.format].keys:
        return None
    found = before(repo, commit.parents[0] if commit.parents else None)
    if found == op.after:
        return None
    if op.after is None:
        return (f"it was made on a commit that records no op, but the commit before it now "
                f"records op {found}: a commit before it was dropped, or it was moved here.")
    if found is None:
        return (f"it was made after op {op.after}, but the commit before it records no op: op "
                f"{op.after} was dropped, or this op was moved or copied here.")
    return (f"it was made after op {op.after}, but the op before it is {found}: op {op.after} "
            "was dropped, or the ops were reordered, or this one was copied here.")
