"""What a harness's own transcript says about a call that just ran, read from its end.

Some harnesses leave out of a hook payload what only their transcript holds: Codex hands a shell
command's PostToolUse ``"tool_response": ""`` whether it exited 0 or 3, while its transcript
already holds the command's ``item_completed`` event with the exit code
(``tests/harness/test_codex_wire.py`` pins that order).

Invariants:
- Only the transcript the payload names for that very session is read: its file name must end
  in ``-<session>.jsonl``, as Codex names it (``rollout-<time>-<session>.jsonl``), or as the
  harness names it (Gemini CLI: ``session-<time>-<first 8 of the session>.jsonl``, whose lines
  name the session again).
- It is read by the bounded reader (``storage/bounded.py``): never through a link, never a
  fifo, at most ``TAIL`` bytes from its end, where what just happened is. Nothing is written,
  nothing is kept.
- Anything unreadable (gone, a link, not JSON, not the shape expected) means "not known"
  (None), never an error: a hook must not break the harness that runs it.
- The import path is small (``json`` and the bounded reader): this runs in a hook.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..storage import bounded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

TAIL = 4 << 20


def entries(transcript: str | None, session: str | None, *, named: str | None = None
            ) -> Iterator[dict[str, Any]]:
    """The transcript's JSON lines, last first (a first line cut by the tail is skipped). Its
    file name must end in ``named`` (by default ``-<session>.jsonl``, as Codex names it)."""
    if not transcript or not session:
        return
    if not Path(transcript).name.endswith(named or f"-{session}.jsonl"):
        return
    try:
        found = bounded.read_tail(Path(transcript), TAIL, what="The transcript")
    except Exception:  # noqa: BLE001  (not known; a hook must not break its harness)
        return
    if found is None:
        return
    data, whole = found
    lines = data.split(b"\n")
    for raw in reversed(lines if whole else lines[1:]):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(entry, dict):
            yield entry


def codex_exit_code(transcript: str | None, session: str | None, call_id: str | None) -> int | None:
    """The exit code Codex's transcript gives the command ``call_id`` ran, if it says."""
    if not call_id:
        return None
    for entry in entries(transcript, session):
        payload = entry.get("payload")
        if not isinstance(payload, dict) or payload.get("type") != "item_completed":
            continue
        item = payload.get("item")
        if isinstance(item, dict) and item.get("type") == "CommandExecution" \
                and item.get("id") == call_id:
            code = item.get("exit_code")
            return code if isinstance(code, int) and not isinstance(code, bool) else None
    return None


def gemini_call_id(transcript: str | None, session: str | None, tool: str, args: dict[str, Any],
                   taken: set[str]) -> str | None:
    """The id Gemini CLI gave the call of ``tool`` with input ``args`` (``<tool>__<id>``), once
    its transcript holds it: the earliest such call whose id is not in ``taken`` (calls are
    written in the order they ran). Only a transcript whose lines name ``session`` is read."""
    if not session:
        return None
    found: list[str] = []
    ours = False
    for entry in entries(transcript, session, named=f"-{session[:8]}.jsonl"):
        if entry.get("sessionId") not in (None, session):
            return None  # another session's transcript under a look-alike name
        ours = ours or entry.get("sessionId") == session
        for done in reversed(entry.get("toolCalls") or []):
            if isinstance(done, dict) and done.get("name") == tool and done.get("args") == args \
                    and isinstance(done.get("id"), str) and done["id"] not in found:
                found.append(done["id"])
    fresh = [i for i in reversed(found) if i not in taken]
    return fresh[0] if fresh and ours else None
