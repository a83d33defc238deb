"""What every harness's transcript fork shares: the refusal, the cut it hands back, JSON lines.

A harness's fork module (``fork_claude``, ``fork_codex``) reads that harness's transcript of a
session (bytes read by the caller, bounded, never through a link) and hands back a ``Cut``: the
bytes of a new session's transcript whose conversation ends with one call's result, the file
name it goes by in the same folder, and the command that continues it. It never writes; what it
cannot vouch for it refuses (``Refused``), naming the line.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ..errors import GitspaceError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

READ_LIMIT = 64 << 20  # bytes of a transcript read for a fork; a larger one is refused


class Refused(GitspaceError):
    """The transcript cannot be forked at that call (gone, edited, folded away, too large)."""


@dataclass(frozen=True)
class Cut:
    """A new session's transcript, ready to be written beside the original."""

    data: bytes
    name: str  # its file name, in the original's folder
    session: str  # the new session's id
    command: str  # what continues it, run in ``cwd``
    cwd: str | None  # the folder the session ran in, as its transcript says


BROKEN = object()  # a line that is not JSON
HINT = "Fork at another op of the session ('gitspace log --session ID' lists them)."


def only(entries: list[Any], holds: Callable[[Any], bool], what: str, why: str,
         file: str) -> int:
    """The index of the one entry that ``holds`` (``what``: its name in a sentence, ``why``:
    what most likely became of it, ``file``: what the harness calls the file, transcript or
    rollout); refused when there is none, or more than one (gitspace would not know which)."""
    found = [n for n, e in enumerate(entries) if holds(e)]
    if not found:
        raise Refused(f"{what} is not in the session's {file} any more: {why}.", hint=HINT)
    if len(found) > 1:
        raise Refused(f"{what} appears {len(found)} times in the session's {file}: it was "
                      "edited, so gitspace cannot tell which to fork at.", hint=HINT)
    return found[0]


def refuse_broken(n: int, entry: Any, file: str) -> None:
    """Refused when line ``n`` (from 0) of what is copied is not a JSON object."""
    if entry is BROKEN or (entry is not None and not isinstance(entry, dict)):
        raise Refused(f"Line {n + 1} of the {file} is not a JSON object: it was edited or "
                      "damaged before the call, so gitspace will not copy it.", hint=HINT)
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def check_uuid(session: str, harness: str) -> None:
    """Refuse a session id that is no UUID: the harness's own are, and gitspace names a file
    after it (anything else may hold a path)."""
    if not UUID.fullmatch(session):
        raise Refused(f"{session[:80]!r} is not a {harness} session id (a UUID), so gitspace will "
                      "not name a transcript file after it.",
                      hint=f"Fork an op that {harness}'s hooks recorded.")


def uuid7() -> str:
    """A new time-ordered UUID (version 7), as Codex names its sessions."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # the RFC 4122 variant
    return str(uuid.UUID(int=value))


def new_uuid4() -> str:
    return str(uuid.uuid4())


def parse_lines(data: bytes) -> list[Any]:
    """Each line of a JSON-lines file, parsed (None: an empty line, BROKEN: not JSON)."""
    out: list[Any] = []
    for raw in data.split(b"\n"):
        if not raw.strip():
            out.append(None)
            continue
        try:
            out.append(json.loads(raw))
        except (ValueError, RecursionError):
            out.append(BROKEN)
    return out


def dump_line(entry: Any) -> bytes:
    """One JSON line as the harnesses write them (compact, text as it is); ASCII escapes for a
    string that is no valid Unicode (a lone surrogate a JavaScript writer escaped)."""
    text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(entry, separators=(",", ":")).encode("ascii")


def blocks(message: Any) -> list[dict[str, Any]]:
    """The content blocks of a message object (none when it has no list of them)."""
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
