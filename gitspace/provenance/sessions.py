"""What the local transcripts say of a recorded call: its session's model, its turn's prompt.

Invariants:
- Only the transcript the harness's hook named for that very session in this checkout
  (``harness.state.sessions``) is read, through the harness's own bounded reader for prompts
  (``harness.transcripts.read``), and only its last ``TAIL`` bytes, never through a link, for
  the model. Nothing is written; nothing read here goes into a note but the model's name.
- A prompt is shown only as its first line, at most ``PROMPT_CHARS`` characters, after the
  secret redactor (``redact.redact``) has run over it.
- Whatever cannot be read (no transcript, gone, another session's, not JSON) is simply unknown:
  ``unknown`` for a model, None for a prompt.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TAIL = 256 << 10  # bytes at the end of a transcript searched for the model
PROMPT_CHARS = 200
UNKNOWN = "unknown"


class Transcripts:
    """The transcripts of one checkout's sessions, read at most once each."""

    def __init__(self, gitdir: Path) -> None:
        self.gitdir = gitdir
        self._paths: dict[tuple[str, str], str | None] | None = None
        self._models: dict[tuple[str, str], str] = {}
        self._messages: dict[str, list[dict[str, Any]] | None] = {}

    def path(self, agent: str, session: str) -> str | None:
        if self._paths is None:
            from ..harness import state

            self._paths = {(k.agent, k.session): k.transcript for k in state.sessions(self.gitdir)}
        return self._paths.get((agent, session))

    def model(self, agent: str, session: str) -> str:
        """The model the session's last reply names in its transcript, else ``unknown``."""
        if (agent, session) not in self._models:
            found = _model_in(self.path(agent, session), session)
            self._models[(agent, session)] = found or UNKNOWN
        return self._models[(agent, session)]

    def prompt(self, agent: str, session: str, tool_use_id: str | None) -> str | None:
        """The first line of the person's prompt of the turn that made call ``tool_use_id``,
        redacted; None when the transcript does not say."""
        if not tool_use_id:
            return None
        if session not in self._messages:
            self._messages[session] = _messages(self.path(agent, session), session)
        messages = self._messages[session]
        if not messages:
            return None
        found = None
        for n, message in enumerate(messages):
            if message["role"] == "assistant" and any(
                    isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") ==
                    tool_use_id for b in message["content"]):
                found = n
                break
        if found is None:
            return None
        for message in reversed(messages[:found]):
            text = _prompt_text(message)
            if text is not None:
                from .redact import redact

                first = next((line.strip() for line in text.splitlines() if line.strip()), "")
                return redact(first)[:PROMPT_CHARS] or None
        return None


def _messages(path: str | None, session: str) -> list[dict[str, Any]] | None:
    from ..errors import GitspaceError
    from ..harness import transcripts

    try:
        return transcripts.read(path, session)[0]
    except GitspaceError:
        return None


def _prompt_text(message: dict[str, Any]) -> str | None:
    """The person's words in a user message (a turn's prompt), not a tool's result."""
    if message["role"] != "user":
        return None
    texts = [b.get("text") for b in message["content"] if isinstance(b, dict)
             and b.get("type") == "text" and isinstance(b.get("text"), str)]
    if not texts or any(isinstance(b, dict) and b.get("type") == "tool_result"
                        for b in message["content"]):
        return None
    text = "\n".join(t for t in texts if t)
    return text if text.strip() and not text.lstrip().startswith("<") else None


def _model_in(path: str | None, session: str) -> str | None:
    if not path or Path(path).name != f"{session}.jsonl":
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.lseek(fd, max(0, size - TAIL), os.SEEK_SET)
        data = os.read(fd, TAIL)
    except OSError:
        return None
    finally:
        os.close(fd)
    for raw in reversed(data.splitlines()):
        if b'"model"' not in raw:
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) else None
        model = message.get("model") if isinstance(message, dict) else None
        if isinstance(model, str) and 0 < len(model) <= 200 and model.isprintable() \
                and not model.startswith("<"):
            return model
    return None
