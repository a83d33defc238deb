"""A call's identity: who makes one tool call and what it is, as one value.

Invariants:
- It is built once, where the call enters (``Workspace.call`` from the workspace's agent and
  session; the agent loop from its session; replay from the recorded op), and handed down
  unchanged: to the registry, the tool, the op it records and the commit's author. Nothing below
  the entry reads the call's agent, session or clock anywhere else, and nothing changes a
  workspace's attributes to pass them down.
- The op a call records carries every field of its identity that ``ledger.Op`` records, by name
  (``Identity.op``): a field added here that the ledger also has (a new trailer, see
  ``storage/ledger.py``) is recorded with no other change.
"""

from __future__ import annotations

from ..storage import ledger, records
from ..storage.objects import Signature

TYPE_CHECKING = False  # the in-place hook imports this: no typing at run time (storage/records.py)
if TYPE_CHECKING:
    from typing import Any


@records.record(frozen=True)
class Identity:
    """Who makes a call and what it is (see the module docstring)."""

    tool: str
    op_id: str | None = None  # fixed in advance (the agent loop saves it first); None: a new one
    tool_use_id: str | None = None
    agent: str | None = None
    session: str | None = None
    source: str = "tool"  # tool, harness, transcript, init (ledger.FORMATS lists them)
    rebased_from: str | None = None  # the commit a replayed op came from (a rebase by meaning)
    # The time the call runs at: what a mutating script sees as now and its commit's time. None:
    # the real clock; a replay pins the recorded op's time.
    clock: float | None = None
    # The delegated call this call answers to (a child agent's: both or neither), recorded as
    # Gitspace-Parent-Session and Gitspace-Parent-Tool-Use-Id.
    parent_session: str | None = None
    parent_tool_use_id: str | None = None
    # The person a call with no agent is by (their git user.name as a token, see person.py): its
    # commit's author. The ledger records it as that author, not as a trailer.
    person: str | None = None
    # ... and their git identity exactly (``user.name <user.email>``), its commit's author
    # (None: the token, as ``NAME <NAME@gitspace>``).
    signature: Signature | None = None

    def op(self, args: dict[str, Any], **links: Any) -> ledger.Op:
        """The ledger record of this call with ``args``; ``links`` are what the tool adds
        (``undo_of``, ``redo_of``, ``script``, a harness op's ``paths``)."""
        recorded = {name: getattr(self, name) for name in _RECORDED}
        recorded["op_id"] = self.op_id or ledger.new_op_id()
        return ledger.Op(args=args, **recorded, **links)

    @classmethod
    def of(cls, op: ledger.Op, **changes: Any) -> Identity:
        """The identity ``op`` was recorded with (what a replay hands the tool again), with
        ``changes`` (its ``clock``, its ``rebased_from``)."""
        return cls(**{**{name: getattr(op, name) for name in _RECORDED}, **changes})

    @property
    def name(self) -> str:
        """Who makes the call, the one name every reader shows: its agent, else the person."""
        return self.agent or self.person or HUMAN

    @property
    def author(self) -> Signature:
        """The commit author of the call's op: ``NAME <NAME@gitspace>`` for its ``name``; a
        person's call (no agent) is by their git identity when it is known."""
        if self.agent is None and self.signature is not None:
            return self.signature
        return author_of(self.name)


EXTERNAL_LISTED = 100  # the paths an external edit's args name (its message lists 200)


def external_edit(paths: list[str], note: str, agent: str | None, session: str | None = None,
                  caller: tuple[str | None, str | None] = (None, None)
                  ) -> tuple[ledger.Op, str, str]:
    """An outside change of ``paths`` found during ``session`` (a delegated one: ``caller`` is
    its parent's session and call), by ``agent`` (whoever changed the files: a person's token,
    or ``human``): its op, commit subject and body."""
    paths = sorted(paths)
    op = Identity("external_edit", agent=agent, session=session, source="external",
                  parent_session=caller[0], parent_tool_use_id=caller[1]).op(
        {"count": len(paths), "paths": paths[:EXTERNAL_LISTED]})
    first = paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"
    body = note + "\n\nFiles:\n" + "\n".join(ledger.canonical_json(p) for p in paths[:200])
    return op, f"external edit of {first}", body


HUMAN = "human"  # a call with neither agent nor person (a library caller that named no one)


def author_of(name: str | None) -> Signature:
    """The author gitspace writes for an agent or a person's token (None: ``human``)."""
    name = name or HUMAN
    return Signature(name, f"{name}@gitspace")


# The identity's fields the ledger records (every one ``ledger.Op`` also has, by name).
_RECORDED = tuple(name for name in records.names(Identity) if name in records.names(ledger.Op))
