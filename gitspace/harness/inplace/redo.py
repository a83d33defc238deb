"""``gitspace redo`` in a person's own checkout: re-apply what the newest undo or rewind there
took back.

A redo reads the line of the checkout's branch newest first (``line.walk``, which never reads
past the line's start into the person's history). It re-applies the newest undo or rewind as
long as no redo did so already and the agent made no op after it (its next call was built on
the files as the undo left them). It is itself an op on the line (tool ``redo``,
``Gitspace-Redo-Of`` naming the undo), made the way an undo is made (``takeback.py``: work-tree
files only, merged with what changed since, a conflict refused with nothing changed), through
the one recorder as an event of its own (``route.record_in``), so it has the same lock, journal
and catch-up as any call.
"""

from __future__ import annotations

from ...errors import NotFound
from ...storage import ids, ledger
from ...storage.gitrepo import GitRepo
from ..events import Event, Options
from ..route import IN_PLACE, record_in
from . import line
from .takeback import Taken, commit_taken, reverse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..recorder import Recorder

TAKING_BACK = ("undo", "rewind")  # the tools of the ops a redo re-applies


def redo(repo: GitRepo, options: Options) -> tuple[Taken, str]:
    """Re-apply what the newest undo or rewind on the line took back: what the redo did, and
    the op id of the undo it re-applied."""
    event = Event("undo", "gitspace", cwd=str(repo.root), extra={"redo": True})
    chosen: list[str] = []

    def act(rec: Recorder) -> Taken:
        undo, commit = target(rec.repo, rec.parent)
        chosen.append(undo.op_id)
        writes = reverse(rec, [(undo, commit)])
        return commit_taken(rec, writes, "redo", {"op": undo.op_id},
                            f"redo {ids.op(undo.op_id)}", [], redo_of=undo.op_id)

    taken = record_in(IN_PLACE, repo, event, options, act=act).taken
    assert isinstance(taken, Taken)
    return taken, chosen[0]


def target(repo: GitRepo, tip: str | None) -> tuple[ledger.Op, str]:
    """The newest undo or rewind on the line from ``tip`` that a redo may re-apply."""
    redone: set[str] = set()
    for sha, op in line.walk(repo, tip):
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
