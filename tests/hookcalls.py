"""Hook calls as harnesses make them, for tests: Claude Code's payloads fed to ``gitspace hook``
in-process through its real entry point, and a person's own repository to record in."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

from conftest import git, ops
from user_repo import add_stash, make_user_repo

from gitspace.harness import hook

SID = "5c0e4b1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b"


def payload(root: Path, event: str, tool: str | None = None, tool_input: dict[str, Any] | None = None,
            use_id: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "session_id": SID, "transcript_path": f"/nonexistent/{SID}.jsonl", "cwd": str(root),
        "prompt_id": "p-1", "permission_mode": "acceptEdits", "hook_event_name": event}
    if tool is not None:
        body.update(tool_name=tool, tool_input=tool_input or {}, tool_use_id=use_id)
    if event == "PostToolUse":
        body["tool_response"] = {"stdout": "", "stderr": ""}
    body.update(extra)
    return body


def run_hook(data: Any, *flags: str, raw: bytes | None = None) -> tuple[int, str]:
    err = io.StringIO()
    stdin = io.BytesIO(raw if raw is not None else json.dumps(data).encode())
    code = hook.main(["hook", "claude-code", *flags], stdin=stdin, stdout=io.StringIO(), stderr=err)
    return code, err.getvalue()


def call(root: Path, tool: str, tool_input: dict[str, Any], use_id: str, effect: Any = None,
         failed: str | None = None) -> str:
    """One whole tool call as Claude Code makes it: PreToolUse, the effect, PostToolUse."""
    code, err = run_hook(payload(root, "PreToolUse", tool, tool_input, use_id))
    assert code == 0, err
    if effect is not None:
        effect()
    if failed:
        code, err2 = run_hook(payload(root, "PostToolUseFailure", tool, tool_input, use_id,
                                      error=failed))
    else:
        code, err2 = run_hook(payload(root, "PostToolUse", tool, tool_input, use_id))
    assert code == 0
    return err + err2


def write(root: Path, rel: str, content: str) -> Any:
    def effect() -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content)
    return effect


def users_repo(path: Path) -> Path:
    """A plain git repository of a user's, with one commit of its own."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README").write_text("mine\n")
    git(path, "add", "README")
    git(path, "commit", "-qm", "my own commit")
    return path


PROGRAM = f"{sys.executable} -m gitspace"
LINE = "refs/gitspace/lines/main"
NAME, EMAIL = "Zoë Tester", "zoe@example.com"


def own_repo(path: Path) -> Path:
    root = make_user_repo(path)
    git(root, "config", "user.name", NAME)
    git(root, "config", "user.email", EMAIL)
    add_stash(root)
    return root


def line_ops(root: Path, ref: str = LINE) -> list[Any]:
    """The ops on a line, newest first."""
    return list(reversed(ops(root, ref)))
