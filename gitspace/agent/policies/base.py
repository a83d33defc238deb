"""What every scripted policy shares: it plays the model's part through the same messages.

Invariant: a policy sees only what a model would (the conversation and the offered tools) and
acts only through tool_use blocks (a value goes back through the ``return`` tool, when the run
offers it: ``finish``); it reads its previous calls' results from the tool_result
blocks of the last user message. Its own notes (``state``) are plain JSON so a resumed session can
hand them back. Every reply says, in its text, that it comes from a script and not a model.
"""

from __future__ import annotations

import contextlib
import copy
import secrets
from dataclasses import dataclass
from typing import Any

from ...errors import GitspaceError
from ..fork import NOT_IN_FORK
from ..model import FORKED, Block, Message, Reply, blocks, result_text, text_block, tool_use_block


class GiveUp(str):
    """A final answer saying the policy could not do its task (the run must not say 'done')."""


@dataclass
class Return:
    """The policy's value, handed back with one ``return`` call."""

    value: Any


@dataclass
class PolicyCall:
    name: str
    input: dict[str, Any]


@dataclass
class Seen:
    """The result of one of the policy's own earlier calls."""

    name: str
    input: dict[str, Any]
    text: str
    is_error: bool


class Policy:
    """Subclasses set ``name`` and ``tools`` and implement ``decide``."""

    name = "policy"
    tools: tuple[str, ...] = ()
    scripted = True

    def __init__(self) -> None:
        self.offered: dict[str, dict[str, Any]] = {}  # the tools of the current call, by name
        self.notes: dict[str, Any] = self.initial()
        self._meta: dict[str, Any] = {"n": 0, "asked": []}

    @property
    def label(self) -> str:
        return f"policy {self.name} (scripted, not a model)"

    def initial(self) -> dict[str, Any]:
        return {}

    def decide(self, task: str, seen: list[Seen]) -> list[PolicyCall] | str | Return:
        """The next calls (run in parallel), the final answer (a ``GiveUp`` when the policy
        could not do the task), or a ``Return``."""
        raise NotImplementedError

    def child(self) -> Policy:
        """The player of a session this one delegates to: a fresh policy of the same kind (its
        notes are its own), which reads its task from its own first message."""
        return type(self)()

    def finish(self, text: str, value: Any) -> str | Return:
        """The policy's end: its value through ``return`` when the run asks for one, else its
        answer in words."""
        return Return(value) if "return" in self.offered else text

    # -- the ModelClient side ----------------------------------------------------------------

    def create(self, *, system: list[Block], messages: list[Message], tools: list[dict[str, Any]],
               max_tokens: int) -> Reply:
        self.offered = {t["name"]: t for t in tools}
        missing = [t for t in self.tools if t not in self.offered]
        if missing:
            return self._answer(GiveUp(f"I cannot do this task here: the workspace offers no "
                                       f"{', '.join(missing)} tool."))
        task = "".join(b.get("text", "") for b in blocks(messages[0]))
        if self._meta["n"] == 0 and _highest_id(messages):
            self._adopt(task, messages)
        decision = self._redo_dropped(messages[-1]) or self.decide(task, self._seen(messages[-1]))
        if isinstance(decision, str):
            return self._answer(decision)
        if isinstance(decision, Return):
            schema = self.offered["return"].get("input_schema", {})
            decision = [PolicyCall("return", _return_input(decision.value, schema))]
        content: list[Block] = [text_block(f"[{self.label}] next: "
                                           + ", ".join(c.name for c in decision))]
        asked = []
        # Past every id the conversation holds: a fork or a resume hands this player a
        # conversation an earlier player (or run) numbered, and an id used twice breaks it.
        self._meta["n"] = max(self._meta["n"], _highest_id(messages))
        for call in decision:
            self._meta["n"] += 1
            use_id = f"{ID_PREFIX}{self._meta['n']:05d}"
            content.append(tool_use_block(use_id, call.name, call.input))
            asked.append([use_id, call.name, call.input])
        self._meta["asked"] = asked
        return Reply(content, "tool_use", {"input_tokens": 0, "output_tokens": 0}, self.label)

    def _adopt(self, task: str, messages: list[Message]) -> None:
        """Take over a conversation an earlier player of this policy played (a fork starts a
        fresh player on the original's conversation): its notes become what they were after
        the last reply here, by deciding again from each reply's results in order. The notes
        come only from what the tools said, so the same results give the same notes. Names it
        makes from now on carry ``tag``: the original's later ones, and another fork's from
        the same point, hold the same numbers."""
        before: Message = messages[0]
        for message in messages[1:]:
            if message.get("role") == "user":
                before = message
                continue
            with contextlib.suppress(GitspaceError, ValueError, KeyError, AssertionError):
                self.decide(task, self._seen(before))  # (only its notes matter here)
            self._meta["asked"] = [[b.get("id"), b.get("name"), b.get("input") or {}]
                                   for b in blocks(message) if b.get("type") == "tool_use"]
        self._meta["tag"] = secrets.token_hex(2)

    @property
    def tag(self) -> str:
        """"" for a player that played its conversation from the start, else what its names
        carry to stay apart from the original's (see ``_adopt``)."""
        return str(self._meta.get("tag", ""))

    def _answer(self, text: str) -> Reply:
        self._meta["asked"] = []
        return Reply([text_block(f"[{self.label}] {text}")], "end_turn",
                     {"input_tokens": 0, "output_tokens": 0}, self.label,
                     gave_up=isinstance(text, GiveUp))

    def _seen(self, last: Message) -> list[Seen]:
        if last.get("role") != "user":
            return []
        found = {b["tool_use_id"]: b for b in blocks(last) if b.get("type") == "tool_result"}
        out = [Seen(*kept) for kept in self._meta.pop("kept", [])]
        for use_id, name, args in self._meta["asked"]:
            block = found.get(use_id)
            if block is not None:
                out.append(Seen(name, args, result_text(block), bool(block.get("is_error"))))
        return out

    def _redo_dropped(self, last: Message) -> list[PolicyCall] | None:
        """The calls of the last reply that a fork says did not happen (it starts after an
        earlier call of that reply), asked for again; the others' results wait in the notes
        for the next decision, which sees the whole reply's. None when nothing was dropped."""
        seen = self._seen(last) if last.get("role") == "user" else []
        dropped = [s for s in seen if s.is_error and s.text.startswith(NOT_IN_FORK_START)]
        if not dropped:
            return None
        self._meta["kept"] = [[s.name, s.input, s.text, s.is_error] for s in seen
                              if s not in dropped]
        return [PolicyCall(s.name, s.input) for s in dropped]

    def state(self) -> dict[str, Any]:
        return copy.deepcopy({"notes": self.notes, "meta": self._meta})

    def load_state(self, state: dict[str, Any]) -> None:
        if "notes" in state:
            self.notes = copy.deepcopy(state["notes"])
            self._meta = copy.deepcopy(state["meta"])
        if state.get(FORKED) and self._meta["n"]:
            self._meta["tag"] = secrets.token_hex(2)  # (with no notes: ``_adopt`` tags them)


ID_PREFIX = "toolu_scripted_"
NOT_IN_FORK_START = NOT_IN_FORK.split("{", 1)[0]


def _highest_id(messages: list[Message]) -> int:
    """The highest number of a scripted tool-use id in ``messages`` (0 for none)."""
    found = 0
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for block in blocks(message):
            use_id = block.get("id") if block.get("type") == "tool_use" else None
            if isinstance(use_id, str) and use_id.startswith(ID_PREFIX):
                tail = use_id[len(ID_PREFIX):]
                found = max(found, int(tail) if tail.isdigit() and len(tail) < 12 else 0)
    return found


def _return_input(value: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """The ``return`` input that hands back ``value``: wrapped as ``{"value": ...}`` when the
    tool's schema is the wrapping one (see ``agent.returns``)."""
    wrapping = (set(schema.get("properties", {})) == {"value"} and schema.get("required") ==
                ["value"] and schema.get("additionalProperties") is False)
    if wrapping and not (isinstance(value, dict) and set(value) == {"value"}):
        return {"value": value}
    return value if isinstance(value, dict) else {"value": value}
