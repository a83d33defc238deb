"""``gitspace rewind [TURN|OP]``: back to the end of an earlier turn, or to right after an op.

Invariant: rewinding is a restore, hence a new op (the tool ``restore``): nothing is lost, the
abandoned turns stay in the log, and ``undo`` brings them back. Turns are the checkpoints the
Stop hook makes (``<agent>-<session prefix>-turn-<n>``, see ``naming.turn_name``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import checkpoints
from ..core.workspace import Result, Workspace
from ..errors import NotFound
from ..storage import ledger
from .naming import TURN


@dataclass(frozen=True)
class TurnMark:
    name: str  # the checkpoint
    prefix: str  # <agent>-<session prefix>: one session
    number: int
    commit: str
    time: int
    message: str


def turns(ws: Workspace) -> list[TurnMark]:
    """Every turn checkpoint, oldest first."""
    found = []
    for cp in checkpoints.listing(ws):
        m = TURN.fullmatch(cp.name)
        if m:
            found.append(TurnMark(cp.name, m.group("prefix"), int(m.group("number")), cp.commit,
                                  cp.time, cp.message))
    return found


def target(ws: Workspace, which: str, session: str | None = None) -> dict[str, str]:
    """The restore arguments for TURN (a number: a turn of the latest session, or of the
    session whose id starts with ``session``), a checkpoint name, or an op id."""
    if ledger.OP_ID.fullmatch(which):
        return {"op": which}
    if not (which.isascii() and which.isdigit()):  # ('²' is a digit to isdigit, not to int)
        checkpoints.resolve(ws, which)  # NotFound names the existing ones
        return {"name": which}
    marks = turns(ws)
    if session:
        marks = [t for t in marks if t.prefix.endswith("-" + session[:8]) or t.prefix == session]
    if not marks:
        raise NotFound("No turns are recorded here" + (f" for session {session}." if session
                                                       else "."),
                       hint="Turns are recorded by the hooks: 'gitspace hooks install "
                            "claude-code'. 'gitspace rewind' lists the turns there are.")
    prefix = marks[-1].prefix
    chosen = [t for t in marks if t.prefix == prefix and t.number == int(which)]
    if not chosen:
        have = sorted({t.number for t in marks if t.prefix == prefix})
        raise NotFound(f"Session {prefix} has no turn {which}.",
                       hint=f"Its turns: {', '.join(map(str, have))}. Pick another session with "
                            "--session.")
    return {"name": chosen[-1].name}


def rewind(ws: Workspace, which: str, session: str | None = None) -> Result:
    return ws.call("restore", target(ws, which, session))
