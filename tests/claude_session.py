"""A Claude Code session played without the binary: its hook payloads through ``gitspace hook
claude-code`` (in this process) and its transcript as Claude Code 2.1 writes it.

The transcript's shape is the one measured with the real binary (tests/harness/
test_claude_code_fork.py drives it): JSON lines in ``$HOME/.claude/projects/<folder>/<id>.jsonl``;
each reply block an ``assistant`` entry of its own chained to the one before, each result a
``user`` entry hanging on its call's entry, ``attachment``, ``api-request`` and ``last-prompt``
lines in between. The fast tests of ``gitspace fork`` (bad input, hostile transcripts) use it;
the binary's own resume of a fork is proven by the real-binary test.
"""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path
from typing import Any

from gitspace.harness import hook


def entry_id() -> str:
    return str(uuid.uuid4())


class Session:
    """One Claude Code session in ``root``, its transcript under ``home`` (``hooks``: its hook
    payloads go to ``gitspace hook claude-code``; without, only the transcript is written)."""

    def __init__(self, root: Path, home: Path, session: str | None = None, *,
                 hooks: bool = True) -> None:
        self.root, self.session, self.hooks = root, session or entry_id(), hooks
        folder = home / ".claude" / "projects" / str(root).replace("/", "-").replace("_", "-")
        folder.mkdir(parents=True, exist_ok=True)
        self.transcript = folder / f"{self.session}.jsonl"
        self.last: str | None = None  # the uuid the next message entry hangs on
        self.replies = 0

    # -- the transcript ---------------------------------------------------------------------

    def line(self, entry: dict[str, Any]) -> dict[str, Any]:
        with self.transcript.open("a") as out:
            out.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
        return entry

    def message(self, kind: str, message: dict[str, Any], parent: str | None = None,
                **more: Any) -> str:
        uid = entry_id()
        self.line({"parentUuid": self.last if parent is None else parent, "isSidechain": False,
                   "type": kind, "message": message, "uuid": uid, "cwd": str(self.root),
                   "sessionId": self.session, "version": "2.1.332", **more})
        self.last = uid
        return uid

    # -- what happens ------------------------------------------------------------------------

    def prompt(self, text: str) -> None:
        self.line({"type": "queue-operation", "operation": "enqueue", "sessionId": self.session,
                   "content": text})
        self.hook("UserPromptSubmit", prompt=text, prompt_id=entry_id())
        self.message("user", {"role": "user", "content": text})
        self.message("attachment", {"role": "user", "content": []}, attachment={"type": "x"})

    def reply(self, *calls: tuple[str, str, dict[str, Any]]) -> list[str]:
        """One reply of the model: a text block, then each (tool-use id, tool, input) call."""
        self.replies += 1
        mid = f"msg_{self.replies}"
        self.line({"type": "api-request", "sessionId": self.session, "id": entry_id()})
        self.message("assistant", {"id": mid, "role": "assistant",
                                   "content": [{"type": "text", "text": f"reply {mid}"}]})
        made = []
        for use_id, tool, tool_input in calls:
            made.append(self.message("assistant", {"id": mid, "role": "assistant", "content": [
                {"type": "tool_use", "id": use_id, "name": tool, "input": tool_input}]}))
        self.line({"type": "last-prompt", "lastPrompt": "x", "leafUuid": self.last,
                   "sessionId": self.session})
        return made

    def result(self, call_entry: str, use_id: str, text: str = "done") -> None:
        self.message("user", {"role": "user", "content": [
            {"tool_use_id": use_id, "type": "tool_result", "content": text}]},
            parent=call_entry, sourceToolAssistantUUID=call_entry)

    def write(self, use_id: str, rel: str, content: str) -> None:
        """One Write call, whole: announced, done on disk, recorded, its result written."""
        self.root.mkdir(parents=True, exist_ok=True)
        args = {"file_path": str(self.root / rel), "content": content}
        [made] = self.reply((use_id, "Write", args))
        self.hook("PreToolUse", tool_name="Write", tool_input=args, tool_use_id=use_id)
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.root / rel).write_text(content)
        self.hook("PostToolUse", tool_name="Write", tool_input=args, tool_use_id=use_id,
                  tool_response={"type": "create"})
        self.result(made, use_id)

    def stop(self, text: str = "all done") -> None:
        self.reply()
        self.hook("Stop")

    def hook(self, event: str, **fields: Any) -> None:
        if not self.hooks:
            return
        data = {"session_id": self.session, "transcript_path": str(self.transcript),
                "cwd": str(self.root), "hook_event_name": event, **fields}
        err = io.StringIO()
        code = hook.main(["hook", "claude-code"], stdin=io.BytesIO(json.dumps(data).encode()),
                         stdout=io.StringIO(), stderr=err)
        assert code == 0 and "gitspace:" not in err.getvalue(), err.getvalue()


def three_writes(root: Path, home: Path) -> Session:
    """A whole session: a prompt, three Writes (f1..f3.txt, ids toolu_w1..3), the turn's end."""
    s = Session(root, home)
    s.prompt("write three files")
    for n in (1, 2, 3):
        s.write(f"toolu_w{n}", f"f{n}.txt", f"{n}\n")
    s.stop()
    return s
