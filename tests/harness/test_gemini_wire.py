"""What the real Gemini CLI sends and what its hooks receive: the facts gitspace's Gemini adapter
relies on (``gitspace/harness/gemini.py``).

The installed ``gemini`` binary runs against the fake Gemini API with a hook that only records its
stdin (and the transcript as it was at that moment), so when a Gemini CLI release changes a
payload, this file says which fact moved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_gemini import FakeGemini, call, responses, text
from gemini_cli import Gemini, new_session
from wire_hooks import install, payloads

EVENTS = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "SessionEnd")


def record_hooks(gemini: Gemini, log: Path, timeout: int = 30_000, wait: float = 0) -> None:
    """Every event's hook records what it was handed (``wait``: seconds it sleeps first)."""
    command = install(gemini.home, log, stdout="{}")
    command = f"sleep {wait}; {command}" if wait else command
    settings = gemini.settings()
    settings["hooks"] = {e: [{"hooks": [{"type": "command", "command": command,
                                         "timeout": timeout}]}] for e in EVENTS}
    (gemini.home / ".gemini" / "settings.json").write_text(json.dumps(settings))


def call_ids(transcript: list[dict[str, Any]]) -> list[str]:
    """The tool calls Gemini CLI's transcript names, by id, in order."""
    seen: list[str] = []
    for entry in transcript:
        for done in entry.get("toolCalls") or []:
            if done["id"] not in seen:
                seen.append(done["id"])
    return seen


def test_hooks_receive_no_call_id_and_the_transcript_has_it_only_after(
        gemini: Gemini, fake_gemini: FakeGemini, tmp_path: Path) -> None:
    project, log = tmp_path / "project", tmp_path / "hooks.jsonl"
    project.mkdir()
    record_hooks(gemini, log)
    a = str(project / "a.txt")

    def failures_reported(body: dict[str, Any]) -> None:
        said = {r["id"]: r["response"] for r in responses(body)}  # (the API's ids, as it gave them)
        assert "Exit Code: 3" in said["c1"]["output"]
        assert "error" in said["r2"]

    fake_gemini.reply(call("write_file", {"file_path": a, "content": "one\ntwo\n"}))
    fake_gemini.reply(call("replace", {"file_path": a, "old_string": "two", "new_string": "TWO",
                                       "instruction": "capitalise"}, id="r1"))
    fake_gemini.reply(call("run_shell_command", {"command": "echo y > c.txt; exit 3"}, id="c1"))
    fake_gemini.reply(call("replace", {"file_path": a, "old_string": "absent", "new_string": "x",
                                       "instruction": "fails"}, id="r2"))
    fake_gemini.reply(text("done"), check=failures_reported)
    sid = new_session()
    out = gemini.run_ok(project, "make the files", session=sid)
    fake_gemini.done()
    assert out.result["session_id"] == sid and out.result["response"] == "done"
    assert (project / "a.txt").read_text() == "one\nTWO\n" and (project / "c.txt").exists()
    assert fake_gemini.utility, "Gemini CLI asked its router first, and got JSON fitting its schema"

    seen = payloads(log)
    events = [(p["hook_event_name"], p.get("tool_name")) for p in seen]
    assert events == [
        ("SessionStart", None), ("BeforeAgent", None),
        ("BeforeTool", "write_file"), ("AfterTool", "write_file"),
        ("BeforeTool", "replace"), ("AfterTool", "replace"),
        ("BeforeTool", "run_shell_command"), ("AfterTool", "run_shell_command"),
        ("BeforeTool", "replace"), ("AfterTool", "replace"),
        ("AfterAgent", None), ("SessionEnd", None),
    ]
    transcript = gemini.transcripts()[0]
    for p in seen:
        assert p["session_id"] == sid and p["cwd"] == str(project)
        assert p["transcript_path"] == str(transcript)
        assert not any("id" in key for key in p if key != "session_id"), p.keys()
    # The call ids (the API's, or one Gemini CLI makes) are the tool's name, "__", the id; a call
    # is in the transcript only once its AfterTool hook has returned.
    tools = [p for p in seen if p["hook_event_name"] in ("BeforeTool", "AfterTool")]
    for i, p in enumerate(tools):
        assert len(call_ids(p["_transcript"])) == i // 2
    final = call_ids(seen[-1]["_transcript"])
    assert final[0].startswith("write_file__write_file_")
    assert final[1:] == ["replace__r1", "run_shell_command__c1", "replace__r2"]

    after = [p for p in seen if p["hook_event_name"] == "AfterTool"]
    assert after[0]["tool_input"] == {"file_path": a, "content": "one\ntwo\n"}
    assert "error" not in after[0]["tool_response"]
    shell = after[2]["tool_response"]
    assert "error" not in shell, "a failed shell command carries no error..."
    assert "Exit Code: 3" in shell["llmContent"], "...only its exit code, in the text"
    failed = after[3]["tool_response"]["error"]
    assert set(failed) == {"message", "type"} and "Could not find" in failed["message"]
    assert seen[1]["prompt"] == "make the files"
    assert seen[-2]["hook_event_name"] == "AfterAgent" and "prompt_response" in seen[-2]


def test_a_hook_timeout_is_in_milliseconds(gemini: Gemini, fake_gemini: FakeGemini,
                                           tmp_path: Path) -> None:
    project, log = tmp_path / "project", tmp_path / "hooks.jsonl"
    project.mkdir()
    # What gitspace wrote, meaning seconds; each hook waits a second before it writes, so only a
    # timeout read as milliseconds (30 ms) kills it first, however fast the machine.
    record_hooks(gemini, log, timeout=30, wait=1)
    fake_gemini.reply(text("done"))
    out = gemini.run_ok(project, "hello", session=new_session())
    fake_gemini.done()
    assert payloads(log) == [], "every hook was killed before it could write"
    assert "timed out after 30ms" in out.proc.stderr
