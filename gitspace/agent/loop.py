"""The tool loop: call the model, run every tool it asks for, send the results back, repeat.

Invariants:
- every tool_use block of a reply gets exactly one tool_result, all in one user message, results
  first, ``is_error`` on failures; a tool call cut off by ``max_tokens`` is never run;
- every stop reason is handled on purpose: ``tool_use`` runs tools, ``pause_turn`` continues,
  ``end_turn``/``stop_sequence`` finish, ``max_tokens`` retries with more room or stops, and
  ``refusal``, context-window and API errors stop with a message that says so;
- model calls are counted against ``max_steps``; at the limit the run stops honestly with every
  op so far committed, and can be resumed;
- the session is saved after every step, and a mutating call's op id is saved before it runs, so a
  resumed run reads a finished op back from the ledger instead of applying it twice;
- the conversation sent never breaks a tool_use/tool_result pairing (checked before each call);
- a run asked for a value (``LoopOptions.returns``) is offered the ``return`` tool and ends the moment
  a call of it is accepted, with no further model call. A return is accepted when its input
  fits the schema and it is the turn's only return; the turn's other calls run first, in their
  order, and must all succeed (the value was written before their results were seen, so a
  failure among them makes it suspect). Anything else answers the return with ``is_error`` and
  the loop goes on. A run asked for a value that ends in text stops as ``no_value``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import progress
from ..core import branches
from ..core.result import Result
from ..core.workspace import Workspace
from ..errors import BadArguments, GitspaceError
from ..storage import ledger
from ..tools.recovery import from_ledger
from ..tools.registry import Tool, all_tools
from . import compaction, delegate
from . import fork as forking
from .clients import ModelError
from .definitions import system_blocks, tool_definitions
from .model import DONE, Block, ModelClient, Reply, tool_result_block
from .returns import RETURN, Returns, dumps
from .session import CALL, TOOLS, Session, find, require_readable

MAX_TOKENS_CEILING = 16_384


@dataclass
class LoopEvent:
    """Something the loop did, for a front end to show as it happens."""

    # model | tool | compacted | retry | delegate (a child starts: ``name`` its session) |
    # switched (a resume checked out ``name``, its session's branch, leaving ``text``)
    kind: str
    step: int
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    result: Result | None = None
    text: str = ""
    stop_reason: str | None = None
    recovered: bool = False
    size: int = 0
    before: int = 0  # for "compacted": the conversation's size before
    depth: int = 0  # how many delegated calls deep the session that did it runs


@dataclass
class RunOutcome:
    """How a run of the loop ended (a tool's stage ends in a ``transaction.Outcome``, another
    thing)."""

    # returned | done | gave_up | no_action | no_value | refusal | max_steps | max_tokens |
    # context_window | api_error | stopped. "returned": the model called return with a value
    # that fits (``value``); "no_value": it was asked for one and answered in text. A final
    # answer is "done" unless the agent could not act: a policy that declares it could not do
    # the task is "gave_up"; a run that called tools and saw every one of them fail is
    # "no_action", whatever its answer says. (An answer with no tool call at all is "done": the
    # model chose to answer.)
    status: str
    text: str
    session: Session
    calls: int
    value: Any = None  # the returned value (JSON), when status is "returned"

    @property
    def ok(self) -> bool:
        return self.status in ("done", "returned")


@dataclass
class LoopOptions:
    max_steps: int = 40
    max_tokens: int = 4096
    budget: int = 60_000  # characters of conversation before compaction folds the middle
    keep_last: int = 6
    system: str = ""
    returns: Returns | None = None  # the run must end by returning such a value
    max_depth: int = 4  # a session this deep in delegated calls is not offered delegate


class Loop:
    def __init__(self, ws: Workspace, client: ModelClient, options: LoopOptions | None = None,
                 on_event: Callable[[LoopEvent], None] | None = None, *,
                 sessions: Path | None = None) -> None:
        self.ws = ws
        # Where session files live: the workspace's own, or (a delegated child working in a
        # worktree of its own) the top workspace's, beside its parent's.
        self.sessions = sessions or ws.root
        self.client = client
        self.options = options or LoopOptions()
        self.on_event = on_event or (lambda event: None)
        self.max_tokens = self.options.max_tokens
        self.calls = 0
        self._tools: dict[str, Tool] = {}
        self._definitions: list[dict[str, Any]] = []
        self.returns = self.options.returns
        self.delegating = False  # is this session offered delegate (set per run)

    # -- entry points ------------------------------------------------------------------------

    def start(self, task: str) -> RunOutcome:
        return self.begin(self.new_session(task))

    def new_session(self, task: str, session_id: str | None = None) -> Session:
        """A session for ``task`` on the workspace's branch, not saved yet."""
        session = Session.new(self.sessions, task, agent=self.ws.agent, client=self.client.name,
                              scripted=self.client.scripted, session_id=session_id)
        session.client_state = self.client.state()
        if self.returns is not None:
            session.returns = self.returns.schema
        session.branch, session.base = self.ws.branch(), self.ws.tip()
        return session

    def begin(self, session: Session) -> RunOutcome:
        """Save a new session and run it (its player takes the session's state: a fork's
        starts from the original's notes)."""
        self.client.load_state(session.client_state)
        session.save()
        return self._run(session)

    def resume(self, session_id: str, message: str | None = None) -> RunOutcome:
        """Continue a saved session where it stopped; with ``message``, continue one that ended
        (done, or stopped at a limit) with a new message from the user: its history, compaction
        and ops carry on as they were. A delegated child runs only as its parent's call."""
        session = find(self.sessions, session_id)  # (any form of its id)
        if session.parent_session is not None:
            raise GitspaceError(
                f"Session {session.id} was delegated by session {session.parent_session} (its "
                f"call {session.parent_tool_use_id}): it runs only as that call.",
                hint=f"Resume the parent: gitspace run --resume {session.parent_session}")
        return self.proceed(session, message)

    def proceed(self, session: Session, message: str | None = None) -> RunOutcome:
        """``resume`` for a session already loaded."""
        require_readable(session)
        self.returns = _returns_of(session, self.returns)
        if session.status == "returned" and message is None:
            return RunOutcome("returned", dumps(session.value), session, 0, session.value)
        if session.status == "done" and message is None:
            return RunOutcome("done", "This session already finished; start a new run, or give it "
                                   "a next message.", session, 0)
        if session.scripted != self.client.scripted or (
                session.scripted and session.client != self.client.name):
            raise GitspaceError(
                f"Session {session.id} was run by {session.client}, not {self.client.name}.",
                hint="Resume it with the same --policy (or model) it started with.")
        if message is not None:
            add_user_message(session, message)
        self.client.load_state(session.client_state)
        back = self._go_to(session)
        session.status = "running"
        with self._back_on_crash(back):
            return self._run(session)

    def fork(self, at: forking.Point, instruction: str,
             said: Callable[[Session, str], None] | None = None) -> RunOutcome:
        """A new session forked at ``at`` (``agent/fork.py``), run on its new branch; ``said``
        hears the session and the branch before the run starts."""
        back = self.ws.branch()
        session = self.new_session(instruction)
        with self._back_on_crash(back):
            name = forking.prepare(self.ws, session, at, instruction)
            if said is not None:
                said(session, name)
            return self.begin(session)

    def _go_to(self, session: Session) -> str | None:
        """Check out the branch ``session`` stopped on, if another is (a top-level session in a
        workspace on a branch: a delegated child has its own worktree); the branch that was
        checked out, when it switched."""
        here, there = self.ws.branch(), session.at_branch
        if session.parent_session is not None or here is None or there in (None, here) or (
                self.ws.repo.read_ref(f"refs/heads/{there}") is None):
            return None
        branches.switch(self.ws, self.ws.identity("switch"), there)
        self.on_event(LoopEvent("switched", session.steps, there, text=here))
        return here

    @contextlib.contextmanager
    def _back_on_crash(self, branch: str | None) -> Iterator[None]:
        """A run that ends by an exception leaves the workspace on ``branch`` (the one the
        command found, when it switched away from it): the session's own branch keeps its ops,
        and a resume goes back there."""
        try:
            yield
        except BaseException:
            if branch is not None and self.ws.branch() != branch:
                with contextlib.suppress(Exception):
                    branches.switch(self.ws, self.ws.identity("switch"), branch)
            raise

    def spawn(self, ws: Workspace, client: ModelClient, options: LoopOptions) -> Loop:
        """A loop for a delegated child in ``ws``: its sessions beside this one's, its events
        shown one level deeper."""
        def nested(event: LoopEvent) -> None:
            self.on_event(dataclasses.replace(event, depth=event.depth + 1))

        return Loop(ws, client, options, nested, sessions=self.sessions)

    def announce(self, step: int, child: Session) -> None:
        self.on_event(LoopEvent("delegate", step, child.id, text=child.task))

    # -- the loop ----------------------------------------------------------------------------

    def _run(self, s: Session) -> RunOutcome:
        """Drive the session: every call it makes is this session's, by its agent (the
        workspace's, or the policy's or the model's when the caller gave none)."""
        s.agent = self.ws.agent or s.agent or _agent_name(self.client.name)
        # One tool list per run: byte-stable for the prompt cache, and scripts are discovered
        # once rather than at every model call and tool call.
        self._tools = all_tools(self.ws)
        self.delegating = s.depth < self.options.max_depth
        control = [] if self.returns is None else [self.returns.definition()]
        if self.delegating:
            control.append(delegate.definition())
        self._definitions = tool_definitions(self._tools, control)
        with s.running():
            try:
                return self._drive(s)
            except BaseException as e:
                # Said on disk, so no session reads as running once its process is gone.
                s.status = "interrupted" if isinstance(e, KeyboardInterrupt) else "crashed"
                s.at_branch = self.ws.branch()
                with contextlib.suppress(Exception):
                    s.save()
                raise

    def _drive(self, s: Session) -> RunOutcome:
        while True:
            if s.next == TOOLS:
                ended = self._run_tools(s)
                if ended is not None:
                    return ended
                continue
            if self.calls >= self.options.max_steps:
                return self._stop(s, "max_steps", (
                    f"Stopped after {self.calls} model calls, the limit for this run, before the "
                    f"model finished. Every op so far is committed and the workspace is "
                    f"consistent. Continue with: gitspace run --resume {s.id}"))
            try:
                reply = self._call(s)
            except ModelError as e:
                return self._stop(s, "api_error", f"{e}\nThe session is saved; resume it with: "
                                                  f"gitspace run --resume {s.id}")
            outcome = self._handle(s, reply)
            if outcome is not None:
                return outcome

    def _call(self, s: Session) -> Reply:
        fitted = compaction.fit(s.messages, self.options.budget, keep_last=self.options.keep_last)
        if fitted != s.messages:
            before = compaction.size(s.messages)
            s.messages = fitted
            s.stats.compactions += 1
            self.on_event(LoopEvent("compacted", s.steps, size=compaction.size(fitted), before=before))
        problems = compaction.check(s.messages)
        if problems:  # a bug, not an expected failure: let it surface as one (exit 3)
            raise RuntimeError("The conversation would break the tool pairing rule: "
                               + "; ".join(problems) + ". Please report this gitspace bug.")
        s.stats.peak_request = max(s.stats.peak_request, compaction.size(s.messages))
        reply = self.client.create(system=system_blocks(self.options.system,
                                                        returns=self.returns is not None),
                                   messages=s.messages, tools=self._definitions,
                                   max_tokens=self.max_tokens)
        self.calls += 1
        s.steps += 1
        if s.depth == 0:  # (a delegated child's calls are its own count, under its call)
            progress.report(s.steps, None, "model calls")
        s.client_state = self.client.state()
        self.on_event(LoopEvent("model", s.steps, text=reply.text(), stop_reason=reply.stop_reason,
                            size=compaction.size(s.messages)))
        return reply

    def _handle(self, s: Session, reply: Reply) -> RunOutcome | None:
        """Act on one reply; a RunOutcome means the run ends here."""
        reason = reply.stop_reason
        if reply.tool_uses() and reason in ("tool_use", *DONE):
            self._append(s, reply.content, TOOLS)  # the model asked for tools: answer them
            return None
        if reason == "pause_turn":
            self._append(s, reply.content, CALL)  # the server paused a long turn: call again
            return None
        if reason in DONE or reason == "tool_use":
            self._append(s, reply.content or [{"type": "text", "text": "(no answer)"}], CALL)
            text = reply.text() or "(The model finished without text.)"
            if reply.gave_up:
                return self._stop(s, "gave_up", text)
            if s.stats.tool_calls and s.stats.tool_calls <= s.stats.failed_calls:
                return self._stop(s, "no_action", (
                    f"{text}\n[Every one of the {s.stats.tool_calls} tool call(s) of this session "
                    "failed, so nothing was done in the workspace.]"))
            if self.returns is not None:
                return self._stop(s, "no_value", (
                    f"{text}\n[The run was asked for a value, but the model answered in text "
                    f"without calling return. Ask again with: gitspace run --resume {s.id} "
                    "\"Call return with the value.\"]"))
            return self._stop(s, "done", text)
        if reason == "max_tokens":
            return self._max_tokens(s, reply)
        if reason == "refusal":
            return self._stop(s, "refusal", "The model declined to continue (stop reason "
                              f"'refusal'). {reply.text()}".strip())
        if reason == "model_context_window_exceeded":
            return self._stop(s, "context_window", (
                "The conversation no longer fits the model's context window. Resume with a "
                f"smaller --budget so compaction folds more: gitspace run --resume {s.id}"))
        return self._stop(s, "stopped", f"The model stopped for a reason gitspace does not know "
                                        f"({reason!r}); nothing was run.")

    def _max_tokens(self, s: Session, reply: Reply) -> RunOutcome | None:
        if reply.tool_uses():
            # The last tool call may be cut off mid-arguments: run none of them, ask again with room.
            if self.max_tokens < MAX_TOKENS_CEILING:
                self.max_tokens = min(self.max_tokens * 2, MAX_TOKENS_CEILING)
                self.on_event(LoopEvent("retry", s.steps, text=f"max_tokens {self.max_tokens}"))
                s.save()
                return None
            return self._stop(s, "max_tokens", (
                f"The model's reply was cut off at {self.max_tokens} tokens in the middle of a "
                "tool call, so the call was not run."))
        self._append(s, reply.content or [{"type": "text", "text": "(cut off)"}], CALL)
        return self._stop(s, "max_tokens", (reply.text() + "\n[The answer was cut off at "
                                            f"max_tokens={self.max_tokens}.]").strip())

    def _append(self, s: Session, content: list[Block], next_step: str) -> None:
        s.messages.append({"role": "assistant", "content": content})
        s.next = next_step
        s.save()

    def _stop(self, s: Session, status: str, text: str, value: Any = None) -> RunOutcome:
        s.status = status
        s.at_branch = self.ws.branch()
        s.save()
        return RunOutcome(status, text, s, self.calls, value)

    # -- tools -------------------------------------------------------------------------------

    def _run_tools(self, s: Session) -> RunOutcome | None:
        """Answer every tool call of the last reply; a RunOutcome when a return ended the run."""
        uses = [b for b in s.messages[-1]["content"] if b.get("type") == "tool_use"]
        ending = [u for u in uses if self.returns is not None and u["name"] == RETURN]
        results = {u["id"]: self._run_tool(s, u) for u in uses if u not in ending}
        value, answers = self._take_return(s, ending, list(results.values()))
        results.update(answers)
        s.messages.append({"role": "user", "content": [results[u["id"]] for u in uses]})
        s.pending = {}
        s.next = CALL
        if value is not None:
            s.value = value[0]
            return self._stop(s, "returned", dumps(s.value), value[0])
        s.save()
        return None

    def _take_return(self, s: Session, ending: list[Block], others: list[Block]
                     ) -> tuple[tuple[Any] | None, dict[str, Block]]:
        """The accepted value (in a 1-tuple: None is a value too), and the answer to each return
        call of the turn (see the module docstring for when one is accepted)."""
        assert self.returns is not None or not ending
        failed = [b for b in others if b.get("is_error")]
        answers: dict[str, Block] = {}
        accepted: tuple[Any] | None = None
        for use in ending:
            args = use.get("input")
            if len(ending) > 1:
                result = Result(False, f"return was called {len(ending)} times in one turn; "
                                       "call it once, with the one value.", RETURN)
            elif failed:
                result = Result(False, (
                    f"The value was not accepted: {len(failed)} other call(s) of this turn "
                    "failed (their results are beside this one), and it was written before "
                    "their results were known. Call return again, alone, when the value is "
                    "right."), RETURN)
            elif not isinstance(args, dict):
                result = Result(False, "The tool input must be a JSON object.", RETURN)
            else:
                try:
                    accepted = (self.returns.check(args),)  # type: ignore[union-attr]
                    result = Result(True, "Returned the value; this run ends here.", RETURN)
                except GitspaceError as e:
                    result = Result(False, str(e), RETURN)
            answers[use["id"]] = self._result(s, use, result)
        return accepted, answers

    def _run_tool(self, s: Session, use: Block) -> Block:
        name, args, use_id = use["name"], use.get("input"), use["id"]
        if not isinstance(args, dict):
            return self._result(s, use, Result(False, "The tool input must be a JSON object.", name))
        if name == delegate.DELEGATE and self.delegating:
            return self._result(s, use, delegate.call(self, s, use))
        op_id = s.pending.get(use_id)
        tool = self._tools.get(name)
        if op_id:
            # The tool knows how to find its own effect (a script gone since is looked up as any op).
            text = (tool.recover if tool else from_ledger)(self.ws, args, op_id)
            if text is not None:
                s.stats.recovered += 1
                return self._result(s, use, Result(True, text, name, op=op_id), recovered=True)
        elif tool is not None and tool.mutates:
            op_id = s.pending[use_id] = ledger.new_op_id()
            s.save()
        who = self.ws.identity(name, tool_use_id=use_id, op_id=op_id, agent=s.agent,
                               session=s.id, parent_session=s.parent_session,
                               parent_tool_use_id=s.parent_tool_use_id)
        result = self.ws.call_as(who, args)
        return self._result(s, use, result)

    def _result(self, s: Session, use: Block, result: Result, recovered: bool = False) -> Block:
        s.stats.tool_calls += 1
        s.stats.failed_calls += not result.ok
        s.stats.bytes_read += len(result.text)
        s.stats.largest_result = max(s.stats.largest_result, len(result.text))
        self.on_event(LoopEvent("tool", s.steps, use["name"], use.get("input") or {}, result,
                            recovered=recovered))
        return tool_result_block(use["id"], result.text or "(empty)", is_error=not result.ok)


def _returns_of(session: Session, given: Returns | None) -> Returns | None:
    """What a resumed session must return: what it was started with (``given``, when the caller
    passes the type again, must describe the same value)."""
    if session.returns is None:
        if given is not None:
            raise BadArguments(f"Session {session.id} was not started to return a value.",
                               hint="Resume it without a returns schema, or start a new run.")
        return None
    if given is None:
        return Returns.of(session.returns)
    if given.schema != session.returns:
        raise BadArguments(f"Session {session.id} was started to return another value than the "
                           "one given now.", hint="Resume it with the schema it started with "
                                                  "(or none: the saved one is used).")
    return given


def _agent_name(client: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._:@+=/-]+", "-", client).strip("-._:@+=/")[:200]
    return name or "agent"


def add_user_message(session: Session, message: str) -> None:
    """The user's next message at the end of a session that stopped (saved at once)."""
    if not message.strip():
        raise BadArguments("The next message is empty.", hint="Say what the agent should do next.")
    if session.next != CALL or session.status == "running":
        raise GitspaceError(
            f"Session {session.id} stopped in the middle of a step (status {session.status}), so "
            "it cannot take a new message yet.",
            hint=f"Finish it first with 'gitspace run --resume {session.id}', then send the "
                 "message.")
    last = session.messages[-1] if session.messages else None
    if last is not None and last["role"] == "user":  # keep user/assistant turns alternating
        content = last["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        # A new message object, never an edit of the saved one (the session log diffs by identity).
        session.messages[-1] = {**last, "content": [*blocks, {"type": "text", "text": message}]}
    else:
        session.messages.append({"role": "user", "content": message})
    session.save()
