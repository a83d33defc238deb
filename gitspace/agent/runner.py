"""Choosing the model client for a run, and one line per loop event for front ends to show.

Invariant: with an explicit policy, or without an API key, the run is scripted and says so; with
``ANTHROPIC_API_KEY`` (passed in, never read here) it is the real model. A resumed session keeps
the client it started with.
"""

from __future__ import annotations

from ..errors import BadArguments
from ..storage import ids, ledger
from .loop import LoopEvent
from .model import ModelClient
from .session import Session


def make_client(*, policy: str | None = None, model: str | None = None, api_key: str | None = None,
                base_url: str | None = None) -> ModelClient:
    if policy:
        from .policies import make

        return make(policy)
    if not api_key:
        from .policies import names

        raise BadArguments(
            "No ANTHROPIC_API_KEY is set, so there is no model to run.",
            hint="Set the key to use Claude, or run an offline scripted policy with --policy "
                 + " / --policy ".join(names()) + ".")
    from .clients import DEFAULT_MODEL, AnthropicClient

    return AnthropicClient(model=model or DEFAULT_MODEL, api_key=api_key, base_url=base_url)


def client_for_session(session: Session, *, policy: str | None = None, model: str | None = None,
                       api_key: str | None = None, base_url: str | None = None) -> ModelClient:
    """The client a saved session was started with: a resumed run never changes player."""
    started = f"policy {session.client}" if session.scripted else f"model {session.client}"
    asked = f"policy {policy}" if policy else f"model {model}" if model else None
    if asked is not None and asked != started:
        raise BadArguments(f"Session {session.id} was started with {started}, not {asked}.",
                           hint="Resume it without --policy/--model, or start a new run.")
    if session.scripted:
        return make_client(policy=session.client)
    if not api_key:
        raise BadArguments(f"Session {session.id} ran {started}, and no ANTHROPIC_API_KEY is set.",
                           hint="Set the key to resume it; a scripted policy cannot take over.")
    return make_client(model=session.client, api_key=api_key, base_url=base_url)



def describe(event: LoopEvent) -> str | None:
    """One line for a tool call or compaction as it happens (None for events not worth a line),
    indented under the call when a delegated agent did it."""
    line = _describe(event)
    return None if line is None else "    " * event.depth + line


def _describe(event: LoopEvent) -> str | None:
    if event.kind == "delegate":
        return (f"  {event.step:>3} delegate -> session {ids.session(event.name)}: "
                f"{event.text[:70]}")
    if event.kind == "tool" and event.result is not None:
        r = event.result
        outcome = (f"op {ids.op(r.op)}" if r.op else "ok") if r.ok else "error"
        if event.recovered:
            outcome += " (from the ledger)"
        first = r.text.strip().splitlines()[0] if r.text.strip() else ""
        args = ledger.args_summary(event.input, 48)
        return f"  {event.step:>3} {event.name}({args}) -> {outcome}: {first[:70]}"
    if event.kind == "compacted":
        return (f"  {event.step:>3} compacted the conversation: {event.before:,} -> "
                f"{event.size:,} characters")
    if event.kind == "switched":
        return (f"  Switched from branch {event.text} to {event.name}, where this session "
                "stopped (its ops are there).")
    if event.kind == "retry":
        return f"  {event.step:>3} reply cut off inside a tool call; asking again with {event.text}"
    return None
