"""Bounds on structure someone else wrote, checked before anything walks it.

Invariant: what history, a remote, a harness or a state file hands gitspace is measured here
before any recursive code sees it, so no depth reaches Python's recursion limit and no number
reaches arithmetic it would overflow. Each bound is stated in docs/trust.md ("Depth and size"):

- ``JSON_DEPTH``: JSON someone else wrote (a trailer's args and paths, a state file, a session
  file, a transcript, a script's header) nests at most 100 levels. gitspace itself writes at most
  33 (a tool's arguments nest at most 32, ``core/schema.py``; an elided value one more), so
  anything deeper is a forgery or damage. The depth is read off the text (``nesting``), without
  recursion and before the parser runs: the parser's own recursion is never reached.
- ``TREE_DEPTH``: a tree is walked at most 64 folders deep, the path policy's own limit
  (``core/paths.py``: a path of more parts is refused anyway), so a tree thousands of folders
  deep is refused as the policy would refuse its paths, before the walk could recurse that far.
- ``INT_DIGITS``: a number in a state file is an integer of at most 18 digits or a finite float
  (a huge integer there would overflow the float arithmetic it meets, a pace's times say).

The module stays light (``re``; ``json`` when it parses): a harness's hook reads state through it.
"""

from __future__ import annotations

import math
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

JSON_DEPTH = 100
TREE_DEPTH = 64
INT_DIGITS = 18
# A JSON string (escapes included), unrolled so that a long one costs one pass and no backtracking.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


class OutOfBounds(ValueError):
    """Whole JSON past a bound (a ``ValueError``, as malformed JSON is): not torn, not gitspace's."""


class TooDeep(OutOfBounds):
    """JSON nested deeper than the bound."""


def nesting(text: str) -> int:
    """How deep ``text`` (JSON) nests its arrays and objects, read without parsing it. For text
    that is no JSON the answer is some number, and the parser then says what is wrong."""
    deepest = depth = 0
    for found in _BRACKET.finditer(_STRING.sub('""', text)):
        if found.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def check_nesting(text: str, what: str, limit: int = JSON_DEPTH) -> None:
    """Refuse (``TooDeep``) JSON ``text`` that nests deeper than ``limit``."""
    if nesting(text) > limit:
        raise TooDeep(f"{what} nests more than {limit} levels deep")


def loads(raw: bytes | str, what: str = "the JSON", limit: int = JSON_DEPTH) -> Any:
    """JSON someone else wrote, parsed only when it nests at most ``limit`` levels; ``ValueError``
    (``TooDeep``, or the parser's own) otherwise, as for any malformed JSON."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw  # UnicodeDecodeError: a ValueError
    check_nesting(text, what, limit)
    import json  # (here: a read that parses no JSON starts without it)

    return json.loads(text)


def load_state(raw: bytes | str, what: str = "the state file") -> Any:
    """A state file of gitspace's own, as ``loads`` reads JSON, holding only integers of at most
    ``INT_DIGITS`` digits and finite floats (gitspace writes no other numbers there)."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    check_nesting(text, what)
    import json

    return json.loads(text, parse_int=_integer, parse_float=_finite, parse_constant=_constant)


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > INT_DIGITS:
        raise OutOfBounds(f"an integer of {len(text):,} digits is larger than any gitspace keeps")
    return int(text)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise OutOfBounds(f"{text[:40]} is no finite number")
    return value


def _constant(text: str) -> float:
    raise OutOfBounds(f"{text} is no JSON number")


def check_tree_depth(folder: bytes) -> None:
    """Refuse to walk into ``folder`` (a path in a tree, no slash at its end) when what it holds
    would be more than ``TREE_DEPTH`` parts deep, in the path policy's own words."""
    if folder.count(b"/") + 1 >= TREE_DEPTH:
        path = folder
        from ..errors import PathRefused

        shown = path[:200].decode("utf-8", "replace") + "..."
        raise PathRefused(f"The path {shown!r} was refused: it is more than {TREE_DEPTH} folders "
                          "deep.", hint="No work tree holds a tree this deep: it came from a "
                          "history someone wrote by hand.")
