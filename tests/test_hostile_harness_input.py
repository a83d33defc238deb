"""What a harness sends is untrusted input, checked by one validator (``harness/payload.py``) for
``gitspace record`` and every hook alike.

- Structure that cannot be read (too deep, not an object, over the cap) is refused: ``record``
  exits 1 with a sentence; a hook exits 0 (it must never block its harness), says why, and the
  next call records what this one changed, so nothing is lost.
- A field that names a place (``cwd``, the transcript) and cannot be one (a NUL, a lone
  surrogate) is refused the same way.
- Text that reports what happened (a command, an error, a prompt id) is recorded even when it is
  not valid Unicode: a lone surrogate becomes U+FFFD, and the call's op is kept.

Every scenario ends sealed: ``git fsck --strict``, the status it started with, nothing outside.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import head, ops
from hostile import gitspace_argv, never_blocks, sealed, workspace

SID = "5c0e4b1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b"
DEEP = 50_000  # past Python's recursion limit and the JSON parser's


def _hook(root: Path, body: dict[str, Any] | str, *flags: str) -> subprocess.CompletedProcess[str]:
    raw = body if isinstance(body, str) else json.dumps(body)
    return never_blocks(gitspace_argv(root, "hook", "claude-code", *flags), root,
                        stdin=raw.encode("utf-8", "surrogatepass"))


def _record(root: Path, raw: str) -> subprocess.CompletedProcess[str]:
    return never_blocks(gitspace_argv(root, "record"), root,
                        stdin=raw.encode("utf-8", "surrogatepass"))


def _tool(root: Path, event: str, tool_input: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"session_id": SID, "transcript_path": f"/nonexistent/{SID}.jsonl", "cwd": str(root),
            "hook_event_name": event, "tool_name": "Bash", "tool_input": tool_input,
            "tool_use_id": "toolu_1", "prompt_id": "p-1", **extra}


def _nested_args(depth: int) -> str:
    return '{"tool": "Bash", "args": ' + '{"a": ' * depth + "1" + "}" * depth + "}"


def _no_bug(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "unexpected" not in proc.stderr \
        and "bug" not in proc.stderr, proc.stderr


# -- gitspace record: refused, exit 1 -------------------------------------------------------------

RECORD_REFUSED = {
    "nested past the parser": _nested_args(DEEP),
    "nested past 32 levels": _nested_args(40),
    "a NUL in cwd": json.dumps({"tool": "Bash", "args": {}, "cwd": "/tmp/a\0b"}),
    "a lone surrogate in cwd": '{"tool": "Bash", "args": {}, "cwd": "/tmp/\\udc80"}',
}


@pytest.mark.parametrize("name", sorted(RECORD_REFUSED))
def test_record_refuses_what_cannot_be_read(tmp_path: Path, name: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside), sealed(ws.root, outside):
        before = head(ws.root)
        proc = _record(ws.root, RECORD_REFUSED[name])
        assert proc.returncode == 1, proc.stderr
        _no_bug(proc)
        assert "hint" in proc.stderr.lower(), proc.stderr
        assert head(ws.root) == before


def test_record_keeps_a_call_whose_error_text_is_no_unicode(tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        (ws.root / "a.txt").write_text("changed by the failed call\n")
        raw = ('{"tool": "Bash", "args": {"command": "make \\ud800"}, "phase": "failed", '
               '"error": "exit 2 \\udfff", "session": "s1"}')
        with sealed(ws.root, outside, clean=True):
            proc = _record(ws.root, raw)
            assert proc.returncode == 0, proc.stderr
            _no_bug(proc)
        op = ops(ws.root)[-1]
        assert op.tool == "Bash" and op.args["command"] == "make \ufffd", op
        assert "exit 2 \ufffd" in subprocess.run(["git", "log", "-1", "--format=%B"],
                                                 cwd=ws.root, capture_output=True,
                                                 text=True).stdout


# -- hooks: exit 0, nothing lost ------------------------------------------------------------------


HOOK_REFUSED = {
    "nested past the parser": ('{"session_id": "' + SID + '", "hook_event_name": "PostToolUse", '
                               '"tool_name": "Bash", "tool_input": '
                               + '{"a": ' * DEEP + "1" + "}" * DEEP + "}"),
    "a NUL in cwd": "cwd-nul",
    "a lone surrogate in cwd": "cwd-surrogate",
}


@pytest.mark.parametrize("name", sorted(HOOK_REFUSED))
def test_a_hook_refuses_what_cannot_be_read_and_loses_nothing(tmp_path: Path, name: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        body: dict[str, Any] | str = HOOK_REFUSED[name]
        if body == "cwd-nul":
            body = _tool(ws.root, "PostToolUse", {"command": "echo x > a.txt"},
                         cwd=str(ws.root) + "\0")
        elif body == "cwd-surrogate":
            body = json.dumps(_tool(ws.root, "PostToolUse", {"command": "echo x > a.txt"}))
            body = body.replace(json.dumps(str(ws.root)), json.dumps(str(ws.root))[:-1]
                                + '\\udc80"')
        assert _hook(ws.root, _tool(ws.root, "PreToolUse", {"command": "echo x > a.txt"})
                     ).returncode == 0
        (ws.root / "a.txt").write_text("x\n")
        proc = _hook(ws.root, body)
        assert proc.returncode == 0, proc.stderr
        _no_bug(proc)
        assert "nothing was lost" in proc.stderr, proc.stderr
        # The next call of the session records what the refused one changed.
        stop = {"session_id": SID, "cwd": str(ws.root), "hook_event_name": "Stop"}
        with sealed(ws.root, outside, clean=True):
            assert _hook(ws.root, stop).returncode == 0
        assert subprocess.run(["git", "show", "HEAD:a.txt"], cwd=ws.root, capture_output=True,
                              text=True).stdout == "x\n"


@pytest.mark.parametrize("field", ["error", "command", "session_id", "prompt_id", "tool_use_id",
                                   "a key"])
def test_a_hook_keeps_the_call_when_its_text_is_no_unicode(tmp_path: Path, field: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        tool_input = {"command": "echo x > a.txt"}
        pre = _tool(ws.root, "PreToolUse", tool_input)
        post = _tool(ws.root, "PostToolUseFailure", tool_input, error="exit 1")
        lone = "\\ud83d"
        raw_pre, raw_post = json.dumps(pre), json.dumps(post)
        if field == "error":
            raw_post = raw_post.replace('"exit 1"', f'"exit 1 {lone}"')
        elif field == "command":
            raw_pre, raw_post = (r.replace('a.txt"', f'a.txt {lone}"') for r in (raw_pre, raw_post))
        elif field == "a key":
            raw_pre, raw_post = (r.replace('"command"', f'"{lone}": 1, "command"')
                                 for r in (raw_pre, raw_post))
        else:
            value = json.dumps(pre[field])
            raw_pre, raw_post = (r.replace(value, value[:-1] + lone + '"') for r in (raw_pre,
                                                                                    raw_post))
        first = _hook(ws.root, raw_pre)
        assert first.returncode == 0, first.stderr
        _no_bug(first)
        (ws.root / "a.txt").write_text("x\n")
        with sealed(ws.root, outside, clean=True):
            proc = _hook(ws.root, raw_post)
            assert proc.returncode == 0, proc.stderr
            _no_bug(proc)
        recorded = ops(ws.root)[-1]
        assert recorded.source == "harness" and recorded.tool == "Bash", recorded
