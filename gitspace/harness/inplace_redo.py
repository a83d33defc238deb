"""``gitspace redo`` in a person's own checkout, and which op ``gitspace undo`` takes back there.

Both read the line of the checkout's branch newest first (``refs/gitspace/lines/<branch>``):

- ``undo`` (no ``--op``) takes back the agent's newest op that nothing took back: an op an undo
  or a rewind took back counts as taken back unless a redo re-applied it since.
- ``redo`` re-applies what the newest undo or rewind took back, as long as no redo did so
  already and the agent made no op after it (its next call was built on the files as the undo
  left them). It is itself an op on the line (tool ``redo``, ``Gitspace-Redo-Of`` naming the
  undo), made the way an undo is made (``inplace_undo``: work-tree files only, merged with what
  changed since, a conflict refused with nothing changed), through the recorder's seam for
  commands people run (``inplace.handle(..., act=...)``).
"""

from __future__ import annotations

from ..core import line
from ..errors import NotFound
from ..storage import ids, ledger
from ..storage.gitrepo import GitRepo
from . import inplace
from .events import Event, Options
from .inplace_undo import Taken, commit_taken, reverse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .inplace_record import Recorder

TAKING_BACK = ("undo", "rewind")  # the tools of the ops a redo re-applies


def redo(repo: GitRepo, options: Options) -> tuple[Taken, str]:
    """Re-apply what the newest undo or rewind on the line took back: what the redo did, and
    the op id of the undo it re-applied."""
    event = Event("undo", "gitspace", cwd=str(repo.root), extra={"redo": True})
    chosen: list[str] = []

    def act(rec: Recorder) -> Taken:
        undo, commit = redo_target(rec.repo, rec.parent)
        chosen.append(undo.op_id)
        writes = reverse(rec, [(undo, commit)])
        return commit_taken(rec, writes, "redo", {"op": undo.op_id}, f"redo {ids.op(undo.op_id)}",
                       [], redo_of=undo.op_id)

    taken = inplace.handle(event, repo, options, act=act).taken
    assert isinstance(taken, Taken)
    return taken, chosen[0]


def _line(repo: GitRepo, tip: str | None) -> list[tuple[ledger.Op, str]]:
    """The ops of the line from ``tip`` back to where it starts, newest first."""
    found = []
    sha = tip
    while sha is not None:
        commit = repo.commit(sha)
        op = ledger.parse_message(commit.message)
        if op is None:
            break  # (below the line's first op: the person's own commits)
        found.append((op, sha))
        sha = commit.parents[0] if commit.parents else None
    return found


def redo_target(repo: GitRepo, tip: str | None) -> tuple[ledger.Op, str]:
    """The newest undo or rewind on the line from ``tip`` that a redo may re-apply."""
    redone: set[str] = set()
    for op, sha in _line(repo, tip):
        if op.redo_of:
            redone.add(op.redo_of)
        elif op.tool in TAKING_BACK and op.source != "harness" and op.op_id not in redone:
            return op, sha
        elif op.source == "harness" and redone:
            raise NotFound(f"Nothing to redo: the undos since the agent's last op "
                           f"({op.tool} {ids.op(op.op_id)}) were re-applied already.",
                           hint="'gitspace undo' takes that op back again.")
        elif op.source == "harness":
            raise NotFound(f"Nothing to redo: no undo came after the agent's last op "
                           f"({op.tool} {ids.op(op.op_id)}).",
                           hint="'gitspace undo' takes it back; 'gitspace log' lists the ops.")
    raise NotFound("Nothing to redo: no undo or rewind on this checkout's line is left to "
                   "re-apply.", hint="'gitspace log' lists what is recorded here.")


def latest_undoable(repo: GitRepo) -> str:
    """The op id of the agent's newest op on this checkout's line that is not taken back."""
    here = line.where(repo)
    redone: set[str] = set()
    taken: set[str] = set()
    for op, _ in _line(repo, here.tip):
        if op.redo_of:
            redone.add(op.redo_of)
        elif op.op_id not in redone:
            taken |= set(op.undo_of)
        if op.source == "harness" and op.op_id not in taken:
            return op.op_id
    raise NotFound("The agent has no op on this checkout's line to take back.",
                   hint="'gitspace log' lists what is recorded here.")
