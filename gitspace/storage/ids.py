"""The short form of each kind of id gitspace shows: one per kind, the same in the CLI, the JSON
(``short`` and ``session_short`` fields, docs/json.md) and the web view. This docstring is the
contract.

- **op**: the last 8 characters of its id, a 26-character ULID in Crockford base32, upper case
  (``GTR2W8MW``): its random end, unique in practice (two ops made in the same millisecond
  share a start, never an end).
- **session**: ``s-`` and 8 characters of its id, from the part of the id that is random: the
  last 8 of an id gitspace made (a ULID) and of a UUID whose version puts the time first (1, 6,
  7); the first 8 of any other UUID (Claude Code's and Codex's are version 4) and of any other
  token (``s-84836b81``). The ``s-`` means a session never reads as an op or a commit, whatever
  characters its id holds.
- **commit**: its first 12 hexadecimal characters.
- **turn**: its session's short form and its number in that session, ``s-84836b81 turn 2``:
  turns are counted per session, never across sessions.

What a person types back is taken in any form of the same id: the whole id, its short form,
the short form without the ``s-``, or a unique start or end (``lookup`` and the session finders
refuse a part two ids share). ``session_part`` turns any of those into the text to match.
"""

from __future__ import annotations

import re

OP = 8  # characters of an op id's short form
COMMIT = 12  # characters of a commit id's short form
SESSION = 8  # characters of a session id in its short form
SESSION_PREFIX = "s-"

_ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-([0-9a-fA-F])[0-9a-fA-F]{3}-"
                   r"[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TIME_FIRST = {"1", "6", "7"}  # UUID versions whose first characters are a clock


def op(op_id: str) -> str:
    """An op id's short form."""
    return op_id[-OP:]


def commit(sha: str) -> str:
    """A commit id's short form."""
    return sha[:COMMIT]


def session(session_id: str) -> str:
    """A session id's short form: ``s-`` and its random part."""
    return SESSION_PREFIX + session_body(session_id)


def session_body(session_id: str) -> str:
    """The 8 characters of ``session_id`` its short form shows (also what a harness's turn
    marks carry: ``claude-code-84836b81-turn-2``)."""
    uuid = _UUID.fullmatch(session_id)
    if _ULID.fullmatch(session_id) or (uuid is not None and uuid.group(1) in _TIME_FIRST):
        return session_id[-SESSION:]
    return session_id[:SESSION]


def turn(session_id: str, number: int) -> str:
    """A turn as every listing names it: its session's short form and its number there."""
    return f"{session(session_id)} turn {number}"


def session_part(text: str) -> str:
    """What ``text`` (a session as a person typed it) must be part of: the text without the
    ``s-`` of a short form."""
    text = text.strip()
    if text.startswith(SESSION_PREFIX) and len(text) > len(SESSION_PREFIX):
        return text[len(SESSION_PREFIX):]
    return text


def names_session(text: str, session_id: str) -> bool:
    """Could ``text`` name ``session_id``: the id, its short form (with or without ``s-``), a
    start or end of it, or a harness's turn-mark prefix (``claude-code-84836b81``)? Whether it
    names only that one is the caller's to check."""
    part = session_part(text)
    if not part:
        return False
    if part == session_id or session_id.startswith(part) or session_id.endswith(part):
        return True
    body = session_body(session_id)
    return part.endswith("-" + body) and len(part) > len(body) + 1


def looks_like_session(text: str) -> bool:
    """Does ``text`` read as a session's short form (``s-`` and at least 4 characters)?"""
    return text.startswith(SESSION_PREFIX) and len(text) >= len(SESSION_PREFIX) + 4
