"""The session file as a format (agent/session.py's docstring): an append-only log whose saves cost
what changed, which survives a save cut off, rewrites itself when it grows, and reads format 1.

Every check reads the real file back from disk, with a fresh ``Session.load``.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from gitspace import faults
from gitspace.agent import compaction
from gitspace.agent import session as sessions
from gitspace.agent.session import FOLDER, TOOLS, Session
from gitspace.errors import BadArguments, GitspaceError
from gitspace.storage.files import InTheWay


def new(root: Path) -> Session:
    s = Session.new(root, "Summarise the log.", agent="a", client="journal", scripted=True)
    s.save()
    return s


def step(s: Session, i: int, size: int = 300) -> None:
    """One step as the loop makes it: a reply with a tool call, then its result."""
    s.messages.append({"role": "assistant", "content": [
        {"type": "tool_use", "id": f"toolu_{i}", "name": "range", "input": {"i": i}}]})
    s.next = TOOLS
    s.save()
    s.pending = {f"toolu_{i}": f"op{i}"}
    s.save()
    s.messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"{i}: " + "x" * size}]})
    s.pending, s.next, s.steps = {}, "call", s.steps + 1
    s.stats.tool_calls += 1
    s.client_state = {"notes": {"at": i}}
    s.save()


def same(a: Session, b: Session) -> None:
    assert (a.messages, a.stats, a.client_state, a.steps, a.next, a.pending, a.status) == \
           (b.messages, b.stats, b.client_state, b.steps, b.next, b.pending, b.status)


def test_a_save_appends_what_the_step_changed_and_the_file_reads_back_the_same(tmp_path: Path) -> None:
    s = new(tmp_path)
    assert s.path.name == f"{s.id}.jsonl"
    sizes = []
    for i in range(40):
        before = s.path.read_bytes()
        step(s, i)
        after = s.path.read_bytes()
        assert after.startswith(before)  # nothing written before is written again
        sizes.append(len(after) - len(before))
    # Each step adds its own two messages and the fields that changed: the same few hundred
    # bytes at step 40 as at step 1, however long the conversation has grown.
    assert max(sizes) - min(sizes) < 20 and max(sizes) < 300 + 600
    lines = s.path.read_bytes().split(b"\n")
    assert json.loads(lines[0])["format"] == 2 and lines[-1] == b""
    assert len(lines) == 1 + 3 * 40 + 1
    same(Session.load(tmp_path, s.id), s)


def test_only_a_pending_op_id_or_a_new_status_is_flushed_before_the_save_returns(
        tmp_path: Path) -> None:
    s = new(tmp_path)
    flushed: list[str] = []
    with faults.inject("file.fsync", lambda: flushed.append(s.next), times=None):
        for i in range(5):
            step(s, i)  # three saves: the reply, the pending op id, the results
        assert flushed == [TOOLS] * 5  # once a step: the op id, before its op would run
        s.status = "done"
        s.save()
    assert len(flushed) == 6
    with faults.inject("file.fsync", errno.EIO):  # a flush that fails is the save's failure
        s.pending = {"toolu_x": "opx"}
        with pytest.raises(OSError, match="injected at file.fsync"):
            s.save()
    s.save()  # the failed save's line may be in the file: the next one starts a new snapshot
    assert s.path.read_bytes().count(b"\n") == 1
    same(Session.load(tmp_path, s.id), s)


def test_compaction_and_a_replaced_message_are_saved_as_a_kept_prefix(tmp_path: Path) -> None:
    s = new(tmp_path)
    for i in range(12):
        step(s, i, size=2_000)
    s.messages = compaction.fit(s.messages, 8_000, keep_last=2)
    assert compaction.is_summary(s.messages[1])
    s.save()
    record = json.loads(s.path.read_bytes().splitlines()[-1])
    assert record["keep"] == 1 and len(record["add"]) == len(s.messages) - 1
    s.messages[-1] = {**s.messages[-1], "content": [{"type": "text", "text": "next"}]}
    s.save()
    record = json.loads(s.path.read_bytes().splitlines()[-1])
    assert record["keep"] == len(s.messages) - 1 and len(record["add"]) == 1
    loaded = Session.load(tmp_path, s.id)
    same(loaded, s)
    step(loaded, 99)  # a loaded session goes on appending
    same(Session.load(tmp_path, s.id), loaded)


def test_a_log_that_outgrows_its_snapshot_is_rewritten_as_one(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sessions, "MIN_REWRITE", 20_000)
    s = new(tmp_path)
    largest = 0
    for i in range(200):
        step(s, i)
        if len(s.messages) > 9:
            s.messages = compaction.fit(s.messages, 3_000, keep_last=2)
        largest = max(largest, s.path.stat().st_size)
    snapshot = s.path.read_bytes().split(b"\n")[0]
    assert len(s.path.read_bytes().split(b"\n")) < 200  # rewritten: not one line per save
    assert largest <= len(snapshot) * 4 + 20_000 + 2_000
    assert json.loads(snapshot)["state"]["steps"] > 1  # a snapshot of a later step
    same(Session.load(tmp_path, s.id), s)


def test_a_save_cut_off_mid_line_is_ignored_and_the_next_save_starts_a_clean_file(
        tmp_path: Path) -> None:
    s = new(tmp_path)
    for i in range(4):
        step(s, i)
    data = s.path.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1  # where the last save's line starts
    s.path.write_bytes(data[:last])
    previous = Session.load(tmp_path, s.id)  # the session as the save before the last left it
    s.path.write_bytes(data[:-40])  # a crash in the middle of the last append
    loaded = Session.load(tmp_path, s.id)
    same(loaded, previous)
    assert loaded.messages == json_messages(data[:last]) and loaded.pending == {"toolu_3": "op3"}
    step(loaded, 4)
    rewritten = s.path.read_bytes()
    assert json.loads(rewritten.split(b"\n")[0])["state"]["next"] == TOOLS  # a new snapshot...
    assert rewritten.count(b"\n") == 3  # ...and the two saves after it
    same(Session.load(tmp_path, s.id), loaded)


def json_messages(data: bytes) -> list[object]:
    """The conversation read by hand, as the format says: the snapshot, then each line's change."""
    lines = [json.loads(line) for line in data.splitlines()]
    messages = lines[0]["messages"]
    for record in lines[1:]:
        del messages[record.get("keep", len(messages)):]
        messages += record.get("add", [])
    return messages


def test_an_unreadable_last_line_is_a_cut_off_save_but_an_unreadable_middle_is_damage(
        tmp_path: Path) -> None:
    s = new(tmp_path)
    step(s, 0)
    good = s.path.read_bytes()
    s.path.write_bytes(good + b'{"set":{"steps": 7\x00\x00}\n')
    assert Session.load(tmp_path, s.id).steps == 1
    s.path.write_bytes(good + b'{"set":\n' + b'{"set":{"steps":7}}\n')
    with pytest.raises(BadArguments, match="damaged.*line 5 is not JSON"):
        Session.load(tmp_path, s.id)
    [listed] = sessions.listing(tmp_path)
    assert listed.status == "damaged" and listed.id == s.id


def test_a_field_from_a_newer_gitspace_is_refused_with_what_to_do(tmp_path: Path) -> None:
    s = new(tmp_path)
    with s.path.open("ab") as f:
        f.write(b'{"set":{"returned_in_2030":1}}\n')
    with pytest.raises(BadArguments, match="returned_in_2030.*does not know") as e:
        Session.load(tmp_path, s.id)
    assert "newer gitspace" in str(e.value.hint)
    s.path.write_bytes(b'{"format":3,"state":{},"messages":[]}\n')
    with pytest.raises(BadArguments, match="another version of gitspace"):
        Session.load(tmp_path, s.id)


def test_a_format_1_session_reads_and_its_next_save_replaces_the_file(tmp_path: Path) -> None:
    folder = tmp_path / FOLDER
    folder.mkdir(parents=True)
    old = {"id": "01OLD", "task": "t", "agent": "a", "client": "maze", "scripted": True,
           "messages": [{"role": "user", "content": "t"}], "next": "call", "status": "max_steps",
           "steps": 3, "pending": {}, "client_state": {"notes": {"n": 1}},
           "stats": {"tool_calls": 2, "bytes_read": 10, "largest_result": 6, "peak_request": 40,
                     "compactions": 0, "recovered": 0, "failed_calls": 0},
           "created": 1.0, "updated": 2.0, "format": 1}
    (folder / "01OLD.json").write_text(json.dumps(old, separators=(",", ":")))
    assert sessions.ids(tmp_path) == ["01OLD"]
    s = sessions.find(tmp_path, "01OLD")
    assert (s.steps, s.stats.tool_calls, s.client_state) == (3, 2, {"notes": {"n": 1}})
    step(s, 0)
    assert not (folder / "01OLD.json").exists() and (folder / "01OLD.jsonl").exists()
    assert sessions.ids(tmp_path) == ["01OLD"]
    same(Session.load(tmp_path, "01OLD"), s)


def test_a_link_or_a_fifo_at_the_session_file_is_never_followed(tmp_path: Path) -> None:
    s = new(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's\n")
    s.path.unlink()
    s.path.symlink_to(outside)
    with pytest.raises(BadArguments, match="symbolic link"):
        Session.load(tmp_path, s.id)
    with pytest.raises(InTheWay, match="symbolic link"):
        step(s, 0)
    assert outside.read_text() == "the user's\n"
    s.path.unlink()
    os.mkfifo(s.path)
    with pytest.raises(InTheWay, match="fifo"):
        step(s, 1)
    with pytest.raises(GitspaceError):
        Session.load(tmp_path, s.id)
    assert sessions.listing(tmp_path)[0].status == "damaged"
