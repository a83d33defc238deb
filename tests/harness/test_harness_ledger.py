"""Ledger format 2 (harness ops) and how replay carries them: as recorded, after a path check."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import assert_clean, git, head

import gitspace
from gitspace.errors import BadArguments, LedgerError
from gitspace.harness import hook
from gitspace.replay.engine import replay
from gitspace.storage import ledger

OP = "01JF3Q7Z0A8K3M2N4P5R6S7T8V"


def harness_op(**over: object) -> ledger.Op:
    fields: dict[str, object] = dict(op_id=OP, tool="Write", args={"file_path": "a.txt"},
                                     source="harness", agent="claude-code", session="s-1",
                                     tool_use_id="toolu_1", paths=("a.txt",), path_count=1)
    fields.update(over)
    return ledger.Op(**fields)  # type: ignore[arg-type]


def test_a_harness_op_round_trips_in_format_4_and_reads_in_format_2() -> None:
    op = harness_op(paths=tuple(f"f{i:03}" for i in range(150)), path_count=150)
    message = ledger.encode_message(op, "Bash: make", "Claude Code session s-1.")
    assert "Gitspace-Format: 4\n" in message
    assert message.rstrip().endswith('"f099"]}') and '"count":150' in message
    back = ledger.parse_message(message)
    assert back == harness_op(paths=tuple(f"f{i:03}" for i in range(100)), path_count=150)
    in_two = ledger.parse_message(message.replace("Gitspace-Format: 4", "Gitspace-Format: 2"))
    assert in_two == back and in_two.format == 2  # type: ignore[union-attr]


def test_every_op_is_written_in_format_4_and_format_1_still_reads() -> None:
    op = ledger.Op(op_id=OP, tool="create", args={"path": "a"})
    message = ledger.encode_message(op, "create a")
    assert "Gitspace-Format: 4\n" in message and "Gitspace-Paths" not in message
    assert ledger.parse_message(message) == op
    old = ledger.parse_message(message.replace("Gitspace-Format: 4", "Gitspace-Format: 1"))
    assert old == op and old.format == 1  # type: ignore[union-attr]


def test_harness_tool_names_are_the_harness_own() -> None:
    for name in ("write_file", "apply_patch", "mcp__server__tool", "Shell", "v1.2-x"):
        op = harness_op(tool=name)
        assert ledger.parse_message(ledger.encode_message(op, "x")) == op


@pytest.mark.parametrize("op", [
    harness_op(tool="Bad Name"), harness_op(tool="-x"), harness_op(paths=None),
    ledger.Op(op_id=OP, tool="Write", args={}),  # capitalised, but not a harness op
    ledger.Op(op_id=OP, tool="create", args={}, paths=("a",)),
])
def test_refused_when_written(op: ledger.Op) -> None:
    with pytest.raises(BadArguments):
        op.trailers()


def trailer_block(**rows: str) -> str:
    keys = ["Gitspace-Format", "Gitspace-Op", "Gitspace-Tool", "Gitspace-Source", "Gitspace-Args",
            "Gitspace-Agent", "Gitspace-Paths"]
    base = {"Gitspace-Format": "2", "Gitspace-Op": OP, "Gitspace-Tool": "Write",
            "Gitspace-Source": "harness", "Gitspace-Args": "{}", "Gitspace-Agent": "claude-code",
            "Gitspace-Paths": '{"count":1,"paths":["a"]}'}
    base.update({k.replace("_", "-"): v for k, v in rows.items()})
    return "subject\n\n" + "\n".join(f"{k}: {base[k]}" for k in keys if base.get(k)) + "\n"


@pytest.mark.parametrize("rows,why", [
    ({"Gitspace_Format": "1"}, "written in format 4, not 1"),
    ({"Gitspace_Source": "tool", "Gitspace_Tool": "write"}, "written in format 4, not 2"),
    ({"Gitspace_Paths": ""}, "every harness op has it"),
    ({"Gitspace_Paths": '{"paths":["a"],"count":1}'}, "canonical"),
    ({"Gitspace_Paths": '{"count":0,"paths":["a"]}'}, "canonical"),
    ({"Gitspace_Paths": '{"count":2,"paths":["b","a"]}'}, "canonical"),
    ({"Gitspace_Paths": '{"count":1,"extra":1,"paths":["a"]}'}, "canonical"),
    ({"Gitspace_Tool": "Has Space"}, "Malformed tool name"),
    ({"Gitspace_Format": "9"}, "newer than this gitspace reads"),  # 3 names a parent call
])
def test_malformed_harness_trailers(rows: dict[str, str], why: str) -> None:
    with pytest.raises(LedgerError, match=why):
        ledger.parse_message(trailer_block(**rows))


def test_replay_carries_harness_ops_and_checks_their_paths(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with gitspace.init(root, agent="tester") as ws:
        ws.call("create", {"path": "notes.md", "file_text": "a\n"})
    base = head(root)
    for name, data in (("PreToolUse", None), ("PostToolUse", None)):
        if name == "PostToolUse":
            (root / "made.txt").write_text("made by a shell command\n")
        payload = {"session_id": "s-1", "cwd": str(root), "hook_event_name": name,
                   "tool_name": "Bash", "tool_input": {"command": "make"}, "tool_use_id": "t-1"}
        hook.main(["hook", "claude-code"], stdin=io.BytesIO(json.dumps(payload).encode()),
                  stdout=io.StringIO(), stderr=io.StringIO())
        del data
    with gitspace.open(root, agent="tester") as ws:
        ws.call("str_replace", {"path": "notes.md", "old_str": "a", "new_str": "b"})
        report = replay(ws, "HEAD", base)
    assert report.ok and report.as_recorded == 1 and report.reexecuted == 1, report
    assert_clean(root)

    # The same op claiming other paths than its commit changes is a divergence.
    message = git(root, "log", "-1", "--format=%B", "HEAD~1").replace(
        '"paths":["made.txt"]', '"paths":["other.txt"]')
    forged = git(root, "commit-tree", git(root, "rev-parse", "HEAD~1^{tree}").strip(), "-p",
                 "HEAD~2", "-m", message.rstrip("\n")).strip()
    git(root, "branch", "forged", forged)
    with gitspace.open(root) as ws:
        report = replay(ws, "forged", base)
    assert not report.ok and "a harness op must change exactly the paths it records" in \
        report.divergence.reason
