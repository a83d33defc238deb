"""What a harness sends, read and checked once before anything acts on it: the one validator for
the payload of ``gitspace record`` and of every hook.

Invariants:
- The payload is at most ``MAX_PAYLOAD`` bytes of UTF-8 JSON holding one object, nested at most
  ``MAX_DEPTH`` levels (a tool's arguments' limit, ``core/schema.py``). Anything else is
  ``PayloadRefused`` with a sentence, the parser's own recursion limit included: no depth
  reaches anything that recurses.
- A field that names a place (``PLACES``) is one a system can open: no NUL, no lone surrogate.
  Where a harness names a path that cannot exist, nothing it says about that path is believed.
- Every other string, keys included, is text reporting what happened (a command, an error, an
  id): a lone surrogate (JSON can spell one, UTF-8 cannot store one) becomes U+FFFD, so the call
  is still recorded rather than lost. Ids so repaired no longer match gitspace's token rule and
  are dropped where they are used (``record._token``).
- The import path stays small (no typing at run time): this runs on every tool call.
"""

from __future__ import annotations

import json
import re

from .events import PayloadRefused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

MAX_PAYLOAD = 64 << 20
MAX_DEPTH = 32  # = core.schema.MAX_DEPTH (not imported: a hook's import path stays small)
PLACES = ("cwd", "transcript_path")  # top-level fields that name a folder or a file
_LONE = re.compile("[\ud800-\udfff]")
_HINT = "Send one JSON object on stdin."


def read(stdin: BinaryIO) -> dict[str, Any]:
    """The payload on ``stdin``, checked (see the module docstring)."""
    raw = stdin.read(MAX_PAYLOAD + 1)
    if len(raw) > MAX_PAYLOAD:
        raise PayloadRefused(f"The payload is over {MAX_PAYLOAD >> 20} MiB; it was not read.",
                             hint="Nothing was recorded for this call.")
    return parse(raw)


def parse(raw: bytes | str) -> dict[str, Any]:
    try:
        payload = json.loads(raw)
    except RecursionError:
        raise PayloadRefused(f"The payload nests more than {MAX_DEPTH} levels deep, so it was "
                             "not read.", hint=_HINT) from None
    except ValueError as e:
        raise PayloadRefused(f"The payload is not JSON ({e}).", hint=_HINT) from None
    if not isinstance(payload, dict):
        raise PayloadRefused("The payload is not a JSON object.", hint=_HINT)
    for key in PLACES:
        value = payload.get(key)
        if isinstance(value, str) and ("\0" in value or _LONE.search(value)):
            raise PayloadRefused(
                f"The payload's {key} ({value[:200]!r}) holds a NUL or a lone surrogate, so it "
                "names no place on this system; nothing it reports was believed.",
                hint="Send the path as the system spells it.")
    return _text(payload, 0)  # type: ignore[no-any-return]


def _text(value: Any, depth: int) -> Any:
    """``value`` with every lone surrogate replaced; PayloadRefused past ``MAX_DEPTH``."""
    if isinstance(value, str):
        return _LONE.sub("\ufffd", value) if _LONE.search(value) else value
    if isinstance(value, (dict, list)):
        if depth >= MAX_DEPTH:
            raise PayloadRefused(f"The payload nests more than {MAX_DEPTH} levels deep, so it was "
                                 "not read.", hint=_HINT)
        if isinstance(value, list):
            return [_text(v, depth + 1) for v in value]
        return {_text(k, depth): _text(v, depth + 1) for k, v in value.items()}
    return value
