"""What the real Claude Code sends and what its hooks receive: the facts gitspace's hook relies on.

These tests drive the installed ``claude`` binary against the streaming fake with a hook that only
records its stdin, so when a Claude Code release changes a payload, this file says which fact moved.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from claude_code import ClaudeCode, new_session
from fake_anthropic import FakeAnthropic, text, tool_use

EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
          "Stop", "SessionEnd")
RECORDER = "import sys; open(sys.argv[1], 'a').write(sys.stdin.read().replace(chr(10), ' ') + chr(10))"


def record_hooks(project: Path, out: Path) -> None:
    command = f"{sys.executable} -c \"{RECORDER}\" {out}"
    entry = [{"hooks": [{"type": "command", "command": command}]}]
    hooks = {e: [{"matcher": "*", **entry[0]}] if "Tool" in e else entry for e in EVENTS}
    (project / ".claude").mkdir(parents=True, exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))


def tool_results(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tool_result blocks of the request's last user message, by tool_use_id."""
    last = [m for m in body["messages"] if m["role"] == "user"][-1]
    blocks = last["content"] if isinstance(last["content"], list) else []
    return {b["tool_use_id"]: b for b in blocks if b.get("type") == "tool_result"}


def test_hooks_receive_the_tool_call_in_print_mode(claude_code: ClaudeCode, fake_api: FakeAnthropic,
                                                   tmp_path: Path) -> None:
    project, log = tmp_path / "project", tmp_path / "hooks.jsonl"
    project.mkdir()
    record_hooks(project, log)
    sid = new_session()
    a = str(project / "a.txt")

    def failed_edit_reported(body: dict[str, Any]) -> None:
        assert tool_results(body)["toolu_e2"].get("is_error") is True

    fake_api.reply(text("writing"), tool_use("toolu_w1", "Write", {"file_path": a, "content": "one\ntwo\n"}),
                   stop_reason="tool_use", session=sid)
    fake_api.reply(tool_use("toolu_e1", "Edit", {"file_path": a, "old_string": "two", "new_string": "TWO"}),
                   stop_reason="tool_use", session=sid)
    fake_api.reply(tool_use("toolu_e2", "Edit", {"file_path": a, "old_string": "absent", "new_string": "x"}),
                   stop_reason="tool_use", session=sid)
    fake_api.reply(tool_use("toolu_b1", "Bash", {"command": "echo x > b.txt; echo y > c.txt"}),
                   stop_reason="tool_use", session=sid, check=failed_edit_reported)
    fake_api.reply(tool_use("toolu_b2", "Bash", {"command": "echo z > d.txt; exit 3"}),
                   stop_reason="tool_use", session=sid)
    fake_api.reply(text("done"), session=sid)

    out = claude_code.run_ok(project, "make the files", session=sid)
    fake_api.done()
    assert out.session == sid
    assert all(r.get("stream") is True for r in fake_api.requests), "Claude Code streams every turn"
    assert (project / "a.txt").read_text() == "one\nTWO\n"

    payloads = [json.loads(line) for line in log.read_text().splitlines()]
    events = [(p["hook_event_name"], p.get("tool_use_id")) for p in payloads]
    # The failing Edit is refused before any hook runs: it has no PreToolUse and no PostToolUse.
    assert events == [
        ("SessionStart", None), ("UserPromptSubmit", None),
        ("PreToolUse", "toolu_w1"), ("PostToolUse", "toolu_w1"),
        ("PreToolUse", "toolu_e1"), ("PostToolUse", "toolu_e1"),
        ("PreToolUse", "toolu_b1"), ("PostToolUse", "toolu_b1"),
        ("PreToolUse", "toolu_b2"), ("PostToolUseFailure", "toolu_b2"),
        ("Stop", None), ("SessionEnd", None),
    ]
    for p in payloads:
        assert p["session_id"] == sid and p["cwd"] == str(project)
        assert p["transcript_path"].endswith(f"{sid}.jsonl")
    prompt = payloads[1]
    assert prompt["prompt"] == "make the files" and prompt["prompt_id"]
    post = {p["tool_use_id"]: p for p in payloads if p["hook_event_name"] == "PostToolUse"}
    assert set(post["toolu_w1"]) >= {"session_id", "transcript_path", "cwd", "prompt_id",
                                     "hook_event_name", "tool_name", "tool_input",
                                     "tool_response", "tool_use_id"}
    assert post["toolu_w1"]["prompt_id"] == prompt["prompt_id"]
    assert post["toolu_w1"]["tool_input"] == {"file_path": a, "content": "one\ntwo\n"}
    assert post["toolu_w1"]["tool_response"]["originalFile"] is None
    # What an Edit found in the file before it ran: how outside edits are told apart from it.
    assert post["toolu_e1"]["tool_response"]["originalFile"] == "one\ntwo\n"
    assert post["toolu_e1"]["tool_input"]["replace_all"] is False
    failure = next(p for p in payloads if p["hook_event_name"] == "PostToolUseFailure")
    assert failure["error"] == "Exit code 3" and "tool_response" not in failure
    assert (project / "d.txt").exists(), "a failing Bash call may still have changed files"


def test_a_resumed_session_keeps_its_id_and_numbers_a_new_prompt(
        claude_code: ClaudeCode, fake_api: FakeAnthropic, tmp_path: Path) -> None:
    project, log = tmp_path / "project", tmp_path / "hooks.jsonl"
    project.mkdir()
    record_hooks(project, log)
    sid = new_session()
    fake_api.reply(text("first"), session=sid)

    def history_kept(body: dict[str, Any]) -> None:
        assert "first" in json.dumps(body["messages"]), "the resumed turn carries the first one"

    fake_api.reply(text("second"), session=sid, check=history_kept)
    claude_code.run_ok(project, "one", session=sid)
    claude_code.run_ok(project, "two", session=sid, resume=True)
    fake_api.done()
    payloads = [json.loads(line) for line in log.read_text().splitlines()]
    prompts = [p for p in payloads if p["hook_event_name"] == "UserPromptSubmit"]
    assert [p["prompt"] for p in prompts] == ["one", "two"]
    assert prompts[0]["prompt_id"] != prompts[1]["prompt_id"]
    assert {p["session_id"] for p in payloads} == {sid}
    starts = [p["source"] for p in payloads if p["hook_event_name"] == "SessionStart"]
    assert starts == ["startup", "resume"]


def test_claude_code_refuses_to_edit_anything_under_a_git_folder(
        claude_code: ClaudeCode, fake_api: FakeAnthropic, tmp_path: Path) -> None:
    # So it cannot work in an attached agent's worktree (<repo>/.git/gitspace/worktrees/NAME),
    # whatever its permission rules say: "... which is a sensitive file".
    nested = tmp_path / "repo" / ".git" / "gitspace" / "worktrees" / "agent"
    nested.mkdir(parents=True)
    sid = new_session()

    def refused(body: dict[str, Any]) -> None:
        result = tool_results(body)["toolu_w"]
        assert result.get("is_error") is True and "sensitive file" in json.dumps(result)

    fake_api.reply(tool_use("toolu_w", "Write", {"file_path": str(nested / "plan.md"),
                                                 "content": "x"}),
                   stop_reason="tool_use", session=sid)
    fake_api.reply(text("done"), session=sid, check=refused)
    claude_code.run_ok(nested, "write", session=sid)
    fake_api.done()
    assert not (nested / "plan.md").exists()
