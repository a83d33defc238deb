"""What the loop needs from a model, and the message shapes it speaks (Anthropic's, as dicts).

Invariant: a client answers ``create(system, messages, tools, max_tokens)`` with a ``Reply`` whose
content blocks are plain dicts in the Messages API shape (``text``, ``tool_use``, ...), whatever
stands behind it: the Anthropic SDK or a scripted policy. The loop never learns which, except
through ``scripted``, which it reports so nobody mistakes a script for a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, Any]
Block = dict[str, Any]

DONE = ("end_turn", "stop_sequence")


@dataclass
class Reply:
    content: list[Block]
    stop_reason: str | None
    usage: dict[str, int] = field(default_factory=dict)
    model: str = ""
    # A scripted policy's final answer that says it could not do the task (a model has no such
    # signal; the loop judges a model by whether any of its tool calls worked).
    gave_up: bool = False

    def tool_uses(self) -> list[Block]:
        return [b for b in self.content if b.get("type") == "tool_use"]

    def text(self) -> str:
        return "\n".join(b["text"] for b in self.content if b.get("type") == "text").strip()


class ModelClient(Protocol):
    """Anything that can take the next turn."""

    name: str
    scripted: bool

    def create(self, *, system: list[Block], messages: list[Message], tools: list[dict[str, Any]],
               max_tokens: int) -> Reply: ...

    def state(self) -> dict[str, Any]:
        """What a scripted client must remember across a restart ({} for a model)."""
        ...

    def load_state(self, state: dict[str, Any]) -> None:
        """Take back what ``state`` gave; a state holding ``FORKED`` starts a fork's player."""
        ...


FORKED = "forked"  # in a state handed to load_state: the player goes on in a fork (agent/fork.py)


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def tool_use_block(id: str, name: str, input: dict[str, Any]) -> Block:  # noqa: A002
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def tool_result_block(tool_use_id: str, text: str, is_error: bool = False) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}
    if is_error:
        block["is_error"] = True
    return block


def blocks(message: Message) -> list[Block]:
    """A message's content as a list of blocks (a plain string is one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return [text_block(content)]
    return list(content or [])


def result_text(block: Block) -> str:
    """The text of a tool_result block, whether its content is a string or a list of blocks."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
