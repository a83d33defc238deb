"""What the real Codex CLI sends and what its hooks receive: the facts gitspace's Codex adapter
relies on (``gitspace/harness/codex.py``).

The installed ``codex`` binary runs against the fake Responses API with a hook that only records
its stdin (and the transcript as it was at that moment), so when a Codex release changes a
payload, this file says which fact moved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codex_cli import MODEL, Codex
from fake_responses import FakeResponses, message, outputs, patch, shell
from wire_hooks import install, payloads

EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")
ADD = "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** End Patch\n"
MISSING = "*** Begin Patch\n*** Update File: nope.txt\n@@\n-x\n+y\n*** End Patch\n"


def record_hooks(home: Path, log: Path) -> None:
    command = install(home, log)
    hooks = {e: [{"hooks": [{"type": "command", "command": command, "timeout": 30}]}]
             for e in EVENTS}
    (home / ".codex" / "hooks.json").write_text(json.dumps({"hooks": hooks}))


def exit_codes(transcript: list[dict[str, Any]]) -> dict[str, int | None]:
    """What Codex's transcript says each finished command exited with, by call id."""
    found = {}
    for entry in transcript:
        payload = entry.get("payload") or {}
        item = payload.get("item") or {}
        if payload.get("type") == "item_completed" and item.get("type") == "CommandExecution":
            found[item["id"]] = item.get("exit_code")
    return found


def script(fake: FakeResponses) -> None:
    def shell_outputs(body: dict[str, Any]) -> None:
        said = outputs(body)
        assert "Process exited with code 0" in said["call_s1"]
        assert "Process exited with code 3" in said["call_s2"]

    fake.reply(patch("call_p1", ADD))
    fake.reply(shell("call_s1", "echo x > b.txt"))
    fake.reply(shell("call_s2", "echo y > c.txt; exit 3"))
    fake.reply(patch("call_p2", MISSING), check=shell_outputs)
    fake.reply(message("done"),
               check=lambda body: "verification failed" in outputs(body)["call_p2"])


def test_hooks_receive_each_call_with_its_id(codex: Codex, fake_responses: FakeResponses,
                                             tmp_path: Path) -> None:
    project, log = tmp_path / "project", tmp_path / "hooks.jsonl"
    project.mkdir()
    record_hooks(codex.home, log)
    script(fake_responses)
    out = codex.run_ok(project, "make the files", args=("--skip-git-repo-check",))
    fake_responses.done()
    assert all(r["stream"] is True and r["model"] == MODEL for r in fake_responses.requests)
    offered = {t.get("name"): t.get("type") for t in fake_responses.requests[0]["tools"]}
    assert offered["apply_patch"] == "custom" and offered["exec_command"] == "function"
    assert (project / "a.txt").read_text() == "one\ntwo\n"
    assert (project / "c.txt").exists(), "a failing command may still have changed files"

    seen = payloads(log)
    events = [(p["hook_event_name"], p.get("tool_name"), p.get("tool_use_id")) for p in seen]
    # The failed apply_patch gets a PreToolUse and no PostToolUse.
    assert events == [
        ("SessionStart", None, None), ("UserPromptSubmit", None, None),
        ("PreToolUse", "apply_patch", "call_p1"), ("PostToolUse", "apply_patch", "call_p1"),
        ("PreToolUse", "Bash", "call_s1"), ("PostToolUse", "Bash", "call_s1"),
        ("PreToolUse", "Bash", "call_s2"), ("PostToolUse", "Bash", "call_s2"),
        ("PreToolUse", "apply_patch", "call_p2"),
        ("Stop", None, None), ("SessionEnd", None, None),
    ]
    thread = out.thread
    turn = seen[1]["turn_id"]
    for p in seen:
        assert p["session_id"] == thread and p["cwd"] == str(project)
        assert p["transcript_path"].endswith(f"-{thread}.jsonl")
        assert p["transcript_path"] == str(codex.transcripts()[0])
    assert {p.get("turn_id") for p in seen[1:-1]} == {turn}
    post = {p["tool_use_id"]: p for p in seen if p["hook_event_name"] == "PostToolUse"}
    assert post["call_p1"]["tool_input"] == {"command": ADD}
    assert post["call_s1"]["tool_input"] == {"command": "echo x > b.txt"}
    assert post["call_p1"]["tool_response"].startswith("Exit code: 0\n")
    # A command's result is "" whether it failed or not: the payload cannot tell them apart...
    assert post["call_s1"]["tool_response"] == post["call_s2"]["tool_response"] == ""
    # ...but the transcript already holds its exit code when PostToolUse runs.
    assert exit_codes(post["call_s1"]["_transcript"]) == {"call_s1": 0}
    assert exit_codes(post["call_s2"]["_transcript"]) == {"call_s1": 0, "call_s2": 3}
    assert seen[1]["prompt"] == "make the files"


def test_untrusted_hooks_are_skipped_without_a_word(codex: Codex, fake_responses: FakeResponses,
                                                    tmp_path: Path) -> None:
    project, log = tmp_path / "project", tmp_path / "hooks.jsonl"
    project.mkdir()
    record_hooks(codex.home, log)
    fake_responses.reply(shell("call_s1", "echo x > b.txt"))
    fake_responses.reply(message("done"))
    out = codex.run_ok(project, "make a file", trusted=False, args=("--skip-git-repo-check",))
    fake_responses.done()
    assert (project / "b.txt").exists()
    assert payloads(log) == [], "no hook ran"
    said = (out.proc.stdout + out.proc.stderr).lower()
    assert "trust" not in said and "review" not in said, said
