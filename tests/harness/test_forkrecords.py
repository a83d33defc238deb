"""harness/forkrecords.py: what gitspace keeps of each fork, read back as untrusted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitspace.harness import forkrecords
from gitspace.storage import statefiles

SHA = "a" * 40


def record(**changes: object) -> forkrecords.ForkRecord:
    fields = dict(harness="claude-code", session="new-1", from_session="old-1", op="01" * 13,
                  commit=SHA, tool_use_id="toolu_1", transcript="/h/.claude/p/new-1.jsonl",
                  cwd="/w", command="claude --resume new-1", branch="fork/x", line=None,
                  fork_op=None, at=SHA, time=5.0)
    return forkrecords.ForkRecord(**{**fields, **changes})  # type: ignore[arg-type]


def test_records_round_trip_oldest_first(tmp_path: Path) -> None:
    forkrecords.save(tmp_path, record(session="new-2", time=9.0))
    forkrecords.save(tmp_path, record())
    assert [r.session for r in forkrecords.listing(tmp_path)] == ["new-1", "new-2"]
    assert forkrecords.of(tmp_path, "new-2") == record(session="new-2", time=9.0)
    assert [r.session for r in forkrecords.forks_of(tmp_path, "old-1")] == ["new-1", "new-2"]
    assert forkrecords.of(tmp_path, "absent") is None


@pytest.mark.parametrize("damage", [
    {"commit": "not a sha"}, {"at": None}, {"session": "../x"}, {"op": 7}, {"cwd": 3},
    {"harness": None},
])
def test_a_damaged_record_is_dropped(tmp_path: Path, damage: dict[str, object]) -> None:
    forkrecords.save(tmp_path, record())
    [name] = statefiles.names(tmp_path, forkrecords.FOLDER)
    path = tmp_path / forkrecords.FOLDER / name
    path.write_text(json.dumps({**json.loads(path.read_text()), **damage}))
    assert forkrecords.listing(tmp_path) == []


def test_a_link_for_the_folder_refuses_before_anything(tmp_path: Path) -> None:
    (tmp_path / "gitspace").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "gitspace" / "forks").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(statefiles.StateRefused):
        forkrecords.ready(tmp_path)
    assert forkrecords.listing(tmp_path) == [] and not list((tmp_path / "elsewhere").iterdir())
