"""A fork from any op: the files right after it and the conversation up to its result, continued
with a new instruction on a new branch.

Invariants:
- The op must be a tool call an agent session made (its commit names the session and the
  tool-use id) and that session's file must be here; anything else is refused, changing nothing.
- The new branch starts at the op's commit: its files are the tree right after the op. The
  original branch does not move, and neither do its checkpoints.
- The conversation is the original session's messages up to and including the user message
  that answered the op's call, then the new instruction as a text block after those results.
  Calls of that same turn after the op's call did not happen in the fork (their ops are not in
  its files), so their results say so, with ``is_error``: every ``tool_use`` keeps exactly one
  ``tool_result``. A conversation compacted past the op's call cannot be forked (the call is
  gone from it): the error says so.
- The player (a scripted policy) starts from its notes as saved with the reply that asked for
  the call, and knows it plays a fork (its names must not meet the original's later ones).
- The new session records what it forked (``forked_from``: op, session, branch and commit), so
  the two runs can be shown side by side.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

from ..core import branches, lookup
from ..core.workspace import Workspace
from ..errors import BadArguments, GitspaceError, NotFound
from ..storage import ledger
from .model import FORKED, Message, blocks, text_block, tool_result_block
from .session import Session, player_state_at, require_readable

NOT_IN_FORK = ("This call is not part of the fork: the fork starts right after op {op}, made by "
               "an earlier call of this turn, so it did not run here.")


def conversation(session: Session, tool_use_id: str, op_id: str, instruction: str
                 ) -> list[Message]:
    """The messages of ``session`` up to its answer to call ``tool_use_id``, then
    ``instruction`` (see the module docstring)."""
    for i, message in enumerate(session.messages):
        if message.get("role") != "user":
            continue
        results = [b for b in blocks(message) if b.get("type") == "tool_result"]
        ids = [b.get("tool_use_id") for b in results]
        if tool_use_id not in ids:
            continue
        kept = copy.deepcopy(session.messages[:i])
        cut = ids.index(tool_use_id) + 1
        later = [tool_result_block(str(b.get("tool_use_id")), NOT_IN_FORK.format(op=op_id),
                                   is_error=True) for b in results[cut:]]
        others = [b for b in blocks(message) if b.get("type") != "tool_result"]
        kept.append({"role": "user", "content": [*copy.deepcopy(results[:cut]), *later,
                                                 *copy.deepcopy(others),
                                                 text_block(instruction)]})
        return kept
    raise GitspaceError(
        f"Session {session.id} no longer holds the call {tool_use_id} that made op {op_id}: "
        "its conversation was compacted past it, or the run stopped before the result was saved.",
        hint="Fork at a later op of the session, or start a new run from the files "
             f"('gitspace branch NAME --from' a checkpoint, or 'gitspace restore {op_id}').")


@dataclass(frozen=True)
class Point:
    """Where a fork starts: the op, its commit, and the session whose call made it."""

    op: ledger.Op
    commit: str
    session: Session


def point(ws: Workspace, op_text: str, sessions: Path) -> Point:
    """The fork point ``op_text`` names (an op id or a part of one), or why there is none."""
    op, commit = _op(ws, op_text)
    if op.session is None or op.tool_use_id is None or op.source != "tool":
        raise BadArguments(
            f"Op {op.op_id} ({op.tool}) was not made by a tool call of an agent session, so "
            "there is no conversation to fork.",
            hint=f"Start a new run on its files instead: gitspace branch NAME --from {op.op_id}")
    try:
        original = Session.load(sessions, op.session)
    except NotFound:
        raise NotFound(f"Op {op.op_id} was made by session {op.session}, whose conversation is "
                       "not saved in this checkout (sessions stay local unless committed).",
                       hint="Fork it where the run happened.") from None
    require_readable(original)
    return Point(op, commit, original)


def prepare(ws: Workspace, loop_session: Session, at: Point, instruction: str) -> str:
    """Make ``loop_session`` (a new, unsaved session of the fork's loop) the fork at ``at``:
    its conversation, and a new branch at the op, checked out. The branch's name."""
    if not instruction.strip():
        raise BadArguments("The new instruction is empty.",
                           hint="Say what the agent should do from that op on.")
    op, commit, original = at.op, at.commit, at.session
    assert op.tool_use_id is not None
    loop_session.messages = conversation(original, op.tool_use_id, op.op_id, instruction)
    # The player goes on from its notes as they were when it asked for the call (a scripted
    # policy's; a model keeps none), marked as a fork's: see ``agent.model.FORKED``.
    loop_session.client_state = {**(player_state_at(original, op.tool_use_id) or {}),
                                 FORKED: True}
    name = branches.fork_name(ws, op.op_id)
    # One change of the writer: the branch made and checked out, or neither. (Its reflog names
    # the workspace's agent.)
    branches.create(ws, ws.identity("fork"), name, commit, switch=True)
    loop_session.branch, loop_session.base = name, commit
    loop_session.forked_from = {"op": op.op_id, "session": original.id, "commit": commit,
                                "branch": original.branch, "tool_use_id": op.tool_use_id}
    return name


def origin(session: Session) -> dict[str, str] | None:
    """What ``session`` was forked from, with only well-formed values kept (a session file is
    read back as it is on disk: a damaged one must not break a reader); None for no fork."""
    found = session.forked_from
    if not isinstance(found, dict):
        return None
    kept = {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)
            and ledger.TOKEN.fullmatch(v)}
    return kept if "commit" in kept and ledger.SHA.fullmatch(kept["commit"]) else None


def _op(ws: Workspace, text: str) -> tuple[ledger.Op, str]:
    found = lookup.find_op(ws.repo, lookup.op_id(ws.repo, text.strip()))
    if found is None:
        raise NotFound(f"There is no op {text} on any branch.", hint=lookup.HINT)
    if found.op is None or found.where != "commit":
        raise BadArguments(
            f"Op {found.op_id} made no commit of its own (it {found.describe()}), so there is "
            "no point in the history right after it to fork from.",
            hint="Fork at the op before or after it.")
    return found.op, found.commit
