"""A harness's own transcript of a session, read for the web view: local, bounded, read-only.

Claude Code keeps each session as JSON lines under the person's home
(``~/.claude/projects/<folder>/<session>.jsonl``) and names the file in every hook payload; the
hook keeps that path in its session state (``state.sessions``). Lines of type ``user`` and
``assistant`` carry a ``message`` in the Messages API's shape; one assistant reply is split
over several lines sharing one message id, and is joined back here. Everything else (summaries,
system notes, snapshots) is skipped.

Invariants: only the very file the hook recorded for that session is read, only when its name
is ``<session>.jsonl`` and it is a regular file (a link is not followed); at most ``LIMIT``
bytes are read and at most ``MESSAGES`` messages returned, saying so; nothing is written or
committed. A line that is not JSON, or not of a known shape, is skipped and counted.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import GitspaceError
from ..storage import bounded, bounds
from . import state

TYPE_CHECKING = False  # (typing is not imported at run time: blame reads prompts through here)
if TYPE_CHECKING:
    from typing import Any

LIMIT = 32 << 20
MESSAGES = 5_000


class Unreadable(GitspaceError):
    """The transcript cannot be shown (gone, not a plain file, another session's)."""


def known(gitdir: Path, session: str) -> state.Known | None:
    """The session as the hook recorded it in this checkout, if it did."""
    return next((k for k in state.sessions(gitdir) if k.session == session), None)


def read(path_text: str | None, session: str) -> tuple[list[dict[str, Any]], list[str]]:
    """(messages, notes) of Claude Code's transcript of ``session`` at ``path_text``."""
    if not path_text:
        raise Unreadable(f"The hook recorded no transcript path for session {session}.")
    path = Path(path_text)
    if path.name != f"{session}.jsonl":
        raise Unreadable(f"{path} is not the transcript of session {session}.")
    try:  # the one bounded reader: a regular file, never through a link, never a fifo's wait
        found = bounded.read_named(path, LIMIT, what="The transcript", cut=True)
    except OSError as e:
        raise Unreadable(f"The transcript {path} cannot be read: {e.strerror}.") from None
    except GitspaceError as e:
        raise Unreadable(e.message) from None
    if found is None:
        raise Unreadable(f"The transcript {path} cannot be read: it does not exist.")
    data = found
    notes = []
    if len(data) > LIMIT:
        data = data[:data.rfind(b"\n", 0, LIMIT) + 1]
        notes.append(f"Only the first {LIMIT >> 20} MiB of the transcript are shown.")
    messages, skipped = _messages(data.splitlines())
    if skipped:
        notes.append(f"{skipped} line(s) of the transcript were not messages gitspace can show.")
    if len(messages) > MESSAGES:
        notes.append(f"Only the first {MESSAGES:,} of {len(messages):,} messages are shown.")
        messages = messages[:MESSAGES]
    return messages, notes


PROMPT_BYTES = 1 << 20  # the first prompt is near the top: a listing reads no more of a file


def prompt(found: state.Known) -> str | None:
    """The first line of the first prompt in the transcript of session ``found`` (what a
    listing shows as its task; read here, on this machine, and never committed), or None when
    the transcript cannot be read or holds none."""
    path = Path(found.transcript) if found.transcript else None
    if path is None or path.name != f"{found.session}.jsonl":
        return None
    try:
        data = bounded.read_named(path, PROMPT_BYTES, what="The transcript", cut=True)
    except (OSError, GitspaceError):
        return None
    data = data or b""
    lines = data[:PROMPT_BYTES].splitlines()
    if len(data) > PROMPT_BYTES:
        lines = lines[:-1]  # (cut off in the middle)
    for message in _messages(lines)[0]:
        if message["role"] != "user":
            continue
        for block in message["content"]:
            text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" \
                else None
            if isinstance(text, str) and text.strip():
                return text.strip().splitlines()[0][:200]
    return None


def _messages(lines: list[bytes]) -> tuple[list[dict[str, Any]], int]:
    out: list[dict[str, Any]] = []
    last_id: str | None = None
    skipped = 0
    for raw in lines:
        if not raw.strip():
            continue
        try:
            entry = bounds.loads(raw, "a transcript line")
        except ValueError:
            skipped += 1
            continue
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            skipped += 1
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}] \
            if isinstance(content, str) else None
        if blocks is None:
            skipped += 1
            continue
        mid = message.get("id") if message["role"] == "assistant" else None
        if mid is not None and mid == last_id and out and out[-1]["role"] == "assistant":
            out[-1]["content"] = [*out[-1]["content"], *blocks]  # one reply over several lines
            continue
        out.append({"role": message["role"], "content": list(blocks)})
        last_id = mid if isinstance(mid, str) else None
    return out, skipped
