"""Codex, Gemini CLI and Cursor hooks fed payloads directly: Codex's and Gemini CLI's shaped as
their real binaries send them (tests/harness/test_codex_wire.py, test_gemini_wire.py pin those
shapes; test_codex_cli.py and test_gemini_cli.py drive the binaries themselves), Cursor's as its
documentation shows (its agent is not on npm: no test here runs it). And ``gitspace record`` for
any harness."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_clean, git, ops

import gitspace
from gitspace.harness import hook

GITSPACE = str(Path(sys.executable).parent / "gitspace")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    gitspace.init(tmp_path / "ws").close()
    return tmp_path / "ws"


def send(name: str, data: dict[str, Any]) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = hook.main(["hook", name], stdin=io.BytesIO(json.dumps(data).encode()), stdout=out,
                     stderr=err)
    assert code == 0 and err.getvalue() == "", err.getvalue()
    return out.getvalue()


def harness(root: Path) -> list[Any]:
    return [op for op in ops(root) if op.source == "harness"]


CODEX_SESSION = "019d036d-c7fa-72d2-b6fd-78878bfe34e4"


def codex_transcript(folder: Path, exit_codes: dict[str, int]) -> Path:
    """A Codex rollout file as the binary writes it: each finished command's exit code."""
    path = folder / f"rollout-2026-12-03T10-00-00-{CODEX_SESSION}.jsonl"
    lines = [{"type": "session_meta", "payload": {"id": CODEX_SESSION}}]
    lines += [{"type": "event_msg", "payload": {"type": "item_completed", "item": {
        "type": "CommandExecution", "id": call, "exit_code": code}}}
        for call, code in exit_codes.items()]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_codex(root: Path, tmp_path: Path) -> None:
    transcript = codex_transcript(tmp_path, {"call_1": 0, "call_3": 2})
    common = {"session_id": CODEX_SESSION, "cwd": str(root), "transcript_path": str(transcript),
              "model": "gpt-5.5", "permission_mode": "bypassPermissions",
              "turn_id": "019d036d-turn-1"}
    send("codex", {**common, "hook_event_name": "UserPromptSubmit", "prompt": "fix it"})
    bash = {"tool_name": "Bash", "tool_input": {"command": "echo hi > hi.txt"},
            "tool_use_id": "call_1"}
    send("codex", {**common, "hook_event_name": "PreToolUse", **bash})
    (root / "hi.txt").write_text("hi\n")
    send("codex", {**common, "hook_event_name": "PostToolUse", **bash, "tool_response": ""})
    patch = "*** Begin Patch\n*** Add File: src/new.py\n+x = 1\n*** End Patch\n"
    apply = {"tool_name": "apply_patch", "tool_input": {"command": patch}, "tool_use_id": "call_2"}
    send("codex", {**common, "hook_event_name": "PreToolUse", **apply})
    (root / "src").mkdir()
    (root / "src" / "new.py").write_text("x = 1\n")
    send("codex", {**common, "hook_event_name": "PostToolUse", **apply,
                   "tool_response": "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess.\n"})
    # The same empty result, and the transcript says this one exited 2.
    failing = {"tool_name": "Bash", "tool_input": {"command": "make; false"},
               "tool_use_id": "call_3"}
    send("codex", {**common, "hook_event_name": "PreToolUse", **failing})
    (root / "built").write_text("half\n")
    send("codex", {**common, "hook_event_name": "PostToolUse", **failing, "tool_response": ""})
    send("codex", {**common, "hook_event_name": "Stop", "stop_hook_active": False,
                   "last_assistant_message": "done"})
    assert [(op.tool, op.tool_use_id, op.paths, op.agent) for op in harness(root)] == [
        ("Bash", "call_1", ("hi.txt",), "codex"), ("apply_patch", "call_2", ("src/new.py",), "codex"),
        ("Bash", "call_3", ("built",), "codex")]
    assert harness(root)[1].args == {"command": patch}
    assert "The call failed (exit code 2)" in git(root, "log", "-1", "--format=%B")
    assert "failed" not in git(root, "log", "-1", "--format=%B", "HEAD~1")
    # Codex's session ids are UUIDs of version 7 (the time first): a turn names the random end.
    assert git(root, "tag", "--list").split() == ["gitspace/codex-8bfe34e4-turn-1"]
    assert_clean(root)


def test_codex_reads_only_its_own_sessions_transcript_and_never_through_a_link(
        root: Path, tmp_path: Path) -> None:
    from gitspace.harness import codex

    real = codex_transcript(tmp_path, {"call_1": 1})
    linked = tmp_path / "links" / real.name
    linked.parent.mkdir()
    linked.symlink_to(real)
    other = tmp_path / "rollout-2026-12-03T10-00-00-another-session.jsonl"
    other.write_text(real.read_text())
    base = {"session_id": CODEX_SESSION, "cwd": str(root), "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_input": {"command": "false"}, "tool_use_id": "call_1",
            "tool_response": ""}
    assert codex.event({**base, "transcript_path": str(real)}).kind == "failed"
    for path in (linked, other, tmp_path / "absent.jsonl", tmp_path):
        assert codex.event({**base, "transcript_path": str(path)}).kind == "after", path
    real.write_text("not json\n" + "\0" * 100 + "\n")
    assert codex.event({**base, "transcript_path": str(real)}).kind == "after"


def test_codex_mcp_calls_are_recorded_and_interrupt_ends_the_turn(root: Path) -> None:
    common = {"session_id": "s-mcp", "cwd": str(root), "transcript_path": None,
              "turn_id": "t-1"}
    send("codex", {**common, "hook_event_name": "UserPromptSubmit", "prompt": "go"})
    mcp = {"tool_name": "mcp__notes__write", "tool_input": {"name": "n.md"},
           "tool_use_id": "call_m"}
    send("codex", {**common, "hook_event_name": "PreToolUse", **mcp})
    (root / "n.md").write_text("note\n")
    send("codex", {**common, "hook_event_name": "PostToolUse", **mcp, "tool_response": "ok"})
    send("codex", {**common, "hook_event_name": "Interrupt"})
    assert [(op.tool, op.tool_use_id, op.paths) for op in harness(root)] == [
        ("mcp__notes__write", "call_m", ("n.md",))]
    assert git(root, "tag", "--list").split() == ["gitspace/codex-s-mcp-turn-1"]


def test_gemini_cli(root: Path) -> None:
    common = {"session_id": "g-session-1", "transcript_path": "/tmp/g.json", "cwd": str(root),
              "timestamp": "2026-11-30T10:00:00Z"}
    assert send("gemini-cli", {**common, "hook_event_name": "BeforeAgent", "prompt": "go"}) == "{}\n"
    write = {"tool_name": "write_file",
             "tool_input": {"file_path": str(root / "a.md"), "content": "# a\n"}}
    send("gemini-cli", {**common, "hook_event_name": "BeforeTool", **write})
    (root / "a.md").write_text("# a\n")
    send("gemini-cli", {**common, "hook_event_name": "AfterTool", **write,
                        "tool_response": {"llmContent": "ok", "returnDisplay": "ok"}})
    # A command that exited 1: no error, only its exit code in the text (as Gemini CLI 0.61).
    shell = {"tool_name": "run_shell_command", "tool_input": {"command": "touch b; false"}}
    send("gemini-cli", {**common, "hook_event_name": "BeforeTool", **shell})
    (root / "b").write_text("")
    send("gemini-cli", {**common, "hook_event_name": "AfterTool", **shell, "tool_response": {
        "llmContent": "<untrusted_context>\nOutput: (empty)\nExit Code: 1\nProcess Group PGID: 7"
                      "\n</untrusted_context>", "returnDisplay": "Command exited with code: 1"}})
    # A failed call that still changed a file: its error object is recorded as its message.
    broken = {"tool_name": "write_file",
              "tool_input": {"file_path": str(root / "c.md"), "content": "c\n"}}
    send("gemini-cli", {**common, "hook_event_name": "BeforeTool", **broken})
    (root / "c.md").write_text("half")
    send("gemini-cli", {**common, "hook_event_name": "AfterTool", **broken, "tool_response": {
        "llmContent": "x", "returnDisplay": "x",
        "error": {"message": "The disk is full.", "type": "file_write_failure"}}})
    send("gemini-cli", {**common, "hook_event_name": "AfterAgent", "prompt": "go",
                        "prompt_response": "done", "stop_hook_active": False})
    write_op, shell_op, broken_op = harness(root)
    assert (write_op.tool, write_op.args, write_op.tool_use_id) == (
        "write_file", {"file_path": "a.md", "content": "# a\n"}, None)
    assert (shell_op.tool, shell_op.paths) == ("run_shell_command", ("b",))
    assert "The call failed (exit code 1)" in git(root, "log", "-1", "--format=%B", "HEAD~1")
    failed = git(root, "log", "-1", "--format=%B")
    assert "The call failed (The disk is full.)" in failed and "'type'" not in failed
    assert git(root, "tag", "--list").split() == ["gitspace/gemini-cli-g-sessio-turn-1"]
    assert_clean(root)


@pytest.mark.parametrize(("content", "kind"), [
    ("Output: done\nProcess Group PGID: 7", "after"),
    ("Output: (empty)\nExit Code: 0\nProcess Group PGID: 7", "after"),
    ("Output: (empty)\nSignal: 15\nProcess Group PGID: 7", "failed"),
    ("Output: Exit Code: 9 is what it printed\nProcess Group PGID: 7", "after"),
])
def test_gemini_tells_a_failed_command_by_its_exit_code_line(root: Path, content: str,
                                                             kind: str) -> None:
    from gitspace.harness import gemini

    event = gemini.event({"session_id": "s", "cwd": str(root), "hook_event_name": "AfterTool",
                          "tool_name": "run_shell_command", "tool_input": {"command": "x"},
                          "tool_response": {"llmContent": content, "returnDisplay": ""}})
    assert event.kind == kind


def test_cursor(root: Path) -> None:
    common = {"conversation_id": "conv-123", "generation_id": "gen-456",
              "workspace_roots": [str(root)], "cursor_version": "2.0.77"}
    assert send("cursor", {**common, "hook_event_name": "beforeSubmitPrompt",
                           "prompt": "fix the bug", "attachments": []}) == "{}\n"
    (root / "main.ts").write_text("const foo = 2\n")
    send("cursor", {**common, "hook_event_name": "afterFileEdit", "file_path": str(root / "main.ts"),
                    "edits": [{"old_string": "const foo = 1", "new_string": "const foo = 2"}]})
    shell = {"command": "npm run build", "cwd": str(root)}
    send("cursor", {**common, "hook_event_name": "beforeShellExecution", **shell})
    (root / "dist.js").write_text("built\n")
    send("cursor", {**common, "hook_event_name": "afterShellExecution", **shell, "output": "ok",
                    "duration": 150})
    send("cursor", {**common, "hook_event_name": "stop", "status": "completed", "loop_count": 0})
    edit, build = harness(root)
    assert (edit.tool, edit.session, edit.paths) == ("Edit", "conv-123", ("main.ts",))
    assert edit.args == {"file_path": "main.ts", "edits": [{"old_string": "const foo = 1",
                                                            "new_string": "const foo = 2"}]}
    assert (build.tool, build.args, build.paths) == ("Shell", {"command": "npm run build"},
                                                     ("dist.js",))
    assert git(root, "tag", "--list").split() == ["gitspace/cursor-conv-123-turn-1"]
    assert_clean(root)


def record(root: Path, data: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GITSPACE, "record"], cwd=root, capture_output=True, text=True,
                          input=data if isinstance(data, str) else json.dumps(data))


def test_record_wires_any_harness_with_a_line_of_shell(root: Path) -> None:
    (root / "notes.md").write_text("hello\n")
    out = record(root, {"tool": "edit_file", "args": {"path": "notes.md", "text": "hello"},
                        "agent": "aider", "session": "s1", "tool_use_id": "t1",
                        "paths": ["notes.md"]})
    assert out.returncode == 0, out.stderr
    assert record(root, {"tool": "shell", "args": {"cmd": "make"}, "agent": "aider",
                         "phase": "before"}).returncode == 0
    (root / "built").write_text("x\n")
    assert record(root, {"tool": "shell", "args": {"cmd": "make"}, "agent": "aider"}).returncode == 0
    edit, shell = harness(root)
    assert (edit.tool, edit.agent, edit.session, edit.tool_use_id, edit.paths) == (
        "edit_file", "aider", "s1", "t1", ("notes.md",))
    assert (shell.tool, shell.paths) == ("shell", ("built",))
    assert_clean(root)
    for bad in ("{not json", "[]", json.dumps({"args": {}}), json.dumps({"tool": "x", "args": 3}),
                json.dumps({"tool": "x", "phase": "during"}), json.dumps({"tool": "x", "paths": [1]}),
                json.dumps({"tool": "bad name!", "paths": ["notes.md"]}),
                json.dumps({"tool": "x", "agent": "no spaces allowed"})):
        out = record(root, bad)
        assert out.returncode == 1 and out.stderr.startswith("gitspace: "), (bad, out.stderr)
    assert len(harness(root)) == 2
