"""harness/fork_claude.py: a Claude Code transcript cut at one call's result, in the shape the
real binary writes (tests/claude_session.py; the binary resuming a cut is
tests/harness/test_claude_code_fork.py). Refusals of edited transcripts are in
tests/test_hostile_fork.py, through the command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_session import Session, entry_id

from gitspace.harness import fork_claude
from gitspace.harness.forkcut import Refused

NEW = entry_id()


def played(tmp_path: Path) -> Session:
    s = Session(tmp_path / "ws", tmp_path / "home", hooks=False)
    s.prompt("write three files")
    for n in (1, 2, 3):
        s.write(f"toolu_w{n}", f"f{n}.txt", f"{n}\n")
    s.stop()
    return s


def entries(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()]


def test_the_cut_ends_with_the_calls_result_under_the_new_id(tmp_path: Path) -> None:
    s = played(tmp_path)
    data = s.transcript.read_bytes()
    cut = fork_claude.cut(data, s.session, "toolu_w2", "Write", NEW)
    assert (cut.name, cut.session, cut.command) == (f"{NEW}.jsonl", NEW, f"claude --resume {NEW}")
    assert cut.cwd == str(s.root)
    old, new = data.splitlines(), cut.data.splitlines()
    last = entries(cut.data)[-1]
    assert last["type"] == "user" and last["message"]["content"][0]["tool_use_id"] == "toolu_w2"
    assert "toolu_w3" not in cut.data.decode()
    # Line for line the original's, but for the session id.
    assert [line.replace(s.session.encode(), NEW.encode()) for line in old[:len(new)]] == new
    assert all(e["sessionId"] == NEW for e in entries(cut.data) if "sessionId" in e)


@pytest.mark.parametrize("session", ["a/../../x", "../x", "ABC", "", "0" * 36])
def test_a_session_id_that_is_no_uuid_is_refused(tmp_path: Path, session: str) -> None:
    with pytest.raises(Refused, match="is not a Claude Code session id"):
        fork_claude.cut(b"", session, "toolu_w1", "Write", NEW)
    with pytest.raises(Refused, match="is not a Claude Code session id"):
        fork_claude.cut(b"", NEW, "toolu_w1", "Write", session)


def test_a_call_recorded_as_another_tool_is_refused(tmp_path: Path) -> None:
    s = played(tmp_path)
    with pytest.raises(Refused, match="is a Write call, but its op records Edit"):
        fork_claude.cut(s.transcript.read_bytes(), s.session, "toolu_w2", "Edit", NEW)


def parallel(tmp_path: Path) -> Session:
    """One reply with two Writes: each result hangs on its own call (as the binary writes)."""
    s = Session(tmp_path / "ws", tmp_path / "home", hooks=False)
    s.prompt("write two at once")
    a, b = s.reply(("toolu_a", "Write", {"file_path": "a"}), ("toolu_b", "Write", {"file_path": "b"}))
    s.result(a, "toolu_a")
    s.result(b, "toolu_b")
    s.stop()
    return s


def test_a_fork_at_the_last_of_parallel_calls_holds_both_results(tmp_path: Path) -> None:
    s = parallel(tmp_path)
    cut = fork_claude.cut(s.transcript.read_bytes(), s.session, "toolu_b", "Write", NEW)
    results = [b["tool_use_id"] for e in entries(cut.data) if e.get("type") == "user"
               for b in e["message"]["content"] if isinstance(b, dict)]
    assert results == ["toolu_a", "toolu_b"]


def test_a_fork_that_would_leave_a_parallel_call_without_its_result_is_refused(
        tmp_path: Path) -> None:
    s = parallel(tmp_path)
    with pytest.raises(Refused, match="together with toolu_b"):
        fork_claude.cut(s.transcript.read_bytes(), s.session, "toolu_a", "Write", NEW)


def test_a_call_before_a_compaction_forks_the_conversation_as_it_was(tmp_path: Path) -> None:
    s = played(tmp_path)
    boundary = s.message("system", {}, subtype="compact_boundary")  # what /compact appends
    s.message("user", {"role": "user", "content": "This session is being continued..."},
              parent=boundary, isCompactSummary=True)
    s.write("toolu_w4", "f4.txt", "4\n")
    data = s.transcript.read_bytes()
    before = fork_claude.cut(data, s.session, "toolu_w1", "Write", NEW)
    assert b"compact_boundary" not in before.data and b"toolu_w2" not in before.data
    after = fork_claude.cut(data, s.session, "toolu_w4", "Write", NEW)
    assert b"compact_boundary" in after.data and entries(after.data)[-1]["message"][
        "content"][0]["tool_use_id"] == "toolu_w4"


def test_text_that_is_no_valid_unicode_is_kept_as_an_escape(tmp_path: Path) -> None:
    s = played(tmp_path)
    lines = s.transcript.read_bytes().splitlines()
    first = json.loads(lines[2])  # the prompt, with a lone surrogate a JavaScript writer escaped
    first["message"]["content"] = "\ud800 half a pair"
    lines[2] = json.dumps(first).encode()
    cut = fork_claude.cut(b"\n".join(lines) + b"\n", s.session, "toolu_w1", "Write", NEW)
    assert entries(cut.data)[2]["message"]["content"] == "\ud800 half a pair"
