"""What a saved session may hold: each field in the shape gitspace writes it, and nothing else.

Invariant: a session file is read back as untrusted input (a clone, a copy or another process
can put one at ``.gitspace/sessions/``), and every field drives what a resume does: a child's id
names the folder its worktree is removed from, its branch the ref that is deleted when it is
done, its base a revision handed to git. So a value is believed only when it has the type its
``Session`` field declares (``fits``) and, for a name gitspace makes, the form gitspace makes it
in (``wrong_field``); a resume or a fork goes on from the conversation only when every message
and block has the keys the loop reads (``wrong_message``: the web view shows one that has not,
marked). Each answer is a sentence for the "damaged" error, or None.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from ..storage import ledger

ROLES = ("user", "assistant")


def fits(value: Any, hint: Any) -> bool:
    """Does JSON ``value`` have type ``hint`` (a field's resolved annotation)?"""
    if hint is Any:
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, arg) for arg in args)
    if hint is type(None):
        return value is None
    if hint in (int, float):  # (a float field may read back as an int; a bool is neither)
        kinds = (int,) if hint is int else (int, float)
        return isinstance(value, kinds) and not isinstance(value, bool)
    if origin is list:
        return isinstance(value, list) and all(fits(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(fits(k, args[0]) and fits(v, args[1])
                                               for k, v in value.items())
    if dataclasses.is_dataclass(hint):
        inner = typing.get_type_hints(hint)
        return isinstance(value, dict) and all(k in inner and fits(v, inner[k])
                                               for k, v in value.items())
    return isinstance(value, hint)


def wrong_field(state: Mapping[str, Any], hints: Mapping[str, Any], session_id: str
                ) -> str | None:
    """Why ``state`` (a file's fields) is not a session gitspace saved as ``session_id``."""
    for name, value in state.items():
        if name in hints and not fits(value, hints[name]):
            return f"its field {name} holds a {type(value).__name__}"
    if state.get("id") != session_id:
        return f"it names another session ({str(state.get('id'))[:80]!r})"
    for name, good in _FORMS.items():
        if state.get(name) is not None and not good(state[name]):
            return f"its field {name} is not in the form gitspace writes"
    return None


def _matches(pattern: re.Pattern[str]) -> Callable[[Any], bool]:
    return lambda value: pattern.fullmatch(value) is not None


# The fields that name something gitspace made: a commit, or a token (an op or session id, a
# branch, a tool-use id; a child's id is also held to an op id's form where it names a folder).
_FORMS: dict[str, Callable[[Any], bool]] = {
    "pending": lambda ops: all(ledger.TOKEN.fullmatch(op) for op in ops.values()),
    "base": _matches(ledger.SHA), "joined": _matches(ledger.SHA),
    "branch": _matches(ledger.TOKEN), "at_branch": _matches(ledger.TOKEN),
    "parent_session": _matches(ledger.TOKEN),
    "parent_tool_use_id": _matches(ledger.TOKEN),
    "depth": lambda n: n >= 0, "steps": lambda n: n >= 0,
}


def wrong_message(messages: Any) -> str | None:
    """Why ``messages`` is not a conversation the loop can read (None: it is one)."""
    if not isinstance(messages, list):
        return "its conversation is not a list"
    for n, message in enumerate(messages, start=1):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(message, dict) or message.get("role") not in ROLES or not (
                isinstance(content, str)
                or isinstance(content, list) and all(_readable(b) for b in content)):
            return f"its message {n} is not one a model or the loop wrote"
    return None


def _readable(block: Any) -> bool:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return False
    needs = {"tool_use": ("id", "name"), "tool_result": ("tool_use_id",)}.get(block["type"], ())
    return all(isinstance(block.get(key), str) for key in needs)
