"""An agent as a function: ``ask(ws, task, returns=...)`` runs the loop and returns its value.

Invariant: ``ask`` returns only a value the model handed back with the ``return`` tool and the
check accepted (see ``returns``); every other ending raises ``NoValue``, which carries the
session id, so the run can be continued (``ask(ws, "message", resume=e.session)``) and nothing it
did is lost: its ops are committed, its conversation is saved. The library reads no environment:
the model client is passed in (``AnthropicClient``, a scripted policy, or an ``anthropic.Anthropic``
client, which is wrapped).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..core import timeline
from ..core.workspace import Workspace
from ..errors import BadArguments, GitspaceError, LedgerError
from ..storage import ledger
from . import calltree
from .loop import Loop, LoopEvent, LoopOptions, RunOutcome
from .model import ModelClient
from .returns import ANY, Returns
from .session import Session, listing

T = TypeVar("T")


@dataclass(frozen=True)
class Answer(Generic[T]):
    """What an agent handed back, and where to find what it did."""

    value: T  # the JSON value, or the pydantic model / dataclass instance asked for
    session: str
    # What the call did: the ops of the session and of those it delegated to, oldest first.
    ops: list[ledger.Op] = field(default_factory=list)


class NoValue(GitspaceError):
    """The run ended without returning a value; ``session`` continues it."""

    def __init__(self, outcome: RunOutcome) -> None:
        self.session = outcome.session.id
        self.status = outcome.status
        self.text = outcome.text
        super().__init__(
            f"The agent ended without returning a value ({outcome.status}, session "
            f"{self.session}): {outcome.text}",
            hint=f"Continue it with ask(ws, 'next message', resume={self.session!r}) or "
                 f"'gitspace run --resume {self.session}'; its ops are committed.")


def ask(ws: Workspace, task: str | None = None, *, returns: Any = ANY, client: Any,
        model: str | None = None, resume: str | None = None, fork: str | None = None,
        max_steps: int = 40, budget: int = 60_000, system: str = "",
        on_event: Callable[[LoopEvent], None] | None = None) -> Answer[Any]:
    """Run an agent on ``ws`` until it returns a value that fits ``returns`` (a JSON Schema, a
    pydantic model or a dataclass; default: any JSON value). With ``resume``, continue that
    session instead (``task``, if given, is its next message); with ``fork`` (an op), start
    from that op's files and conversation on a new branch, ``task`` being the new
    instruction (see ``agent.fork``)."""
    kind = Returns.of(returns)
    options = LoopOptions(max_steps=max_steps, budget=budget, system=system, returns=kind)
    loop = Loop(ws, model_client(client, model), options, on_event)
    if resume is not None and fork is not None:
        raise BadArguments("ask takes resume= or fork=, not both.")
    if resume is not None:
        outcome = loop.resume(resume, task)
    elif task is None:
        raise BadArguments("ask needs a task (or resume= a session to continue).")
    elif fork is not None:
        from . import fork as forking

        outcome = loop.fork(forking.point(ws, fork, loop.sessions), task)
    else:
        outcome = loop.start(task)
    if outcome.status != "returned":
        raise NoValue(outcome)
    return Answer(kind.build(outcome.value), outcome.session.id, session_ops(ws, outcome.session))


def model_client(client: Any, model: str | None = None) -> ModelClient:
    """``client`` as the loop's model client: an ``anthropic.Anthropic`` (anything with
    ``messages.create``) is wrapped, anything else must already be one."""
    if hasattr(client, "scripted") and hasattr(client, "create"):
        return client  # type: ignore[no-any-return]
    if hasattr(client, "messages"):
        from .clients import DEFAULT_MODEL, AnthropicClient

        return AnthropicClient(model=model or DEFAULT_MODEL, sdk_client=client)
    raise BadArguments(f"{type(client).__name__} is not a model client.",
                       hint="Pass an anthropic.Anthropic client, an AnthropicClient or a "
                            "scripted policy (gitspace.agent.policies.make).")


def session_ops(ws: Workspace, session: Session) -> list[ledger.Op]:
    """The ops ``session`` and the sessions it delegated to (at any depth) recorded on the
    workspace's branch since the session started, oldest first."""
    tree = {session.id}
    for s, _ in calltree.ordered(listing(session.root or ws.root)):
        if s.parent_session in tree:
            tree.add(s.id)
    rev = f"refs/heads/{ws.branch()}"
    if session.base is None or not ws.repo.is_ancestor(session.base, ws.tip()):
        found = [e.op for e in timeline.query(ws.repo, rev, limit=timeline.ALL).entries]
    else:
        found = []
        for commit in ws.repo.log(f"{session.base}..{ws.tip()}", first_parent=False):
            try:
                found.append(ledger.parse_message(commit.message))
            except LedgerError:
                continue
    return [op for op in reversed(found) if op is not None and op.session in tree]
