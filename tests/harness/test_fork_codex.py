"""harness/fork_codex.py: a Codex rollout cut at one call's output, in the shape Codex 0.171
writes (measured; the binary resuming a cut is tests/harness/test_codex_fork.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitspace.harness import fork_codex
from gitspace.harness.forkcut import Refused, uuid7

# Fixed ids (UUIDv7, as Codex makes them): test ids built from them are the same in every
# process that collects this file (pytest-xdist workers compare what they collected).
OLD, NEW = "019ade21-4c3b-7a10-8d2e-5f6a7b8c9d01", "019ade21-5d4c-7b21-9e3f-6a7b8c9d0e12"
OTHER = "019ade21-6e5d-7c32-8f40-7b8c9d0e1f23"
NAME = f"rollout-2026-12-03T12-23-45-{OLD}.jsonl"


def item(payload: dict[str, Any], kind: str = "response_item") -> dict[str, Any]:
    return {"timestamp": "2026-12-03T12:23:45.000Z", "type": kind, "payload": payload}


def call(n: int, name: str = "apply_patch") -> dict[str, Any]:
    return item({"type": "custom_tool_call", "name": name, "call_id": f"call_{n}",
                 "input": f"*** Begin Patch\n*** Add File: f{n}.txt\n+{n}\n*** End Patch\n"})


def output(n: int) -> dict[str, Any]:
    return item({"type": "custom_tool_call_output", "call_id": f"call_{n}", "output": "ok"})


def event(kind: str) -> dict[str, Any]:
    return item({"type": kind, "thread_id": OLD, "turn_id": "t1"}, "event_msg")


def rollout(*middle: dict[str, Any]) -> list[dict[str, Any]]:
    meta = item({"session_id": OLD, "id": OLD, "cwd": "/work/ws", "originator": "codex_exec"},
                "session_meta")
    lines = [meta, event("task_started"), *middle, event("task_complete")]
    return [{**e, "ordinal": n} for n, e in enumerate(lines)]


def data(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(e) + "\n" for e in lines).encode()


def three() -> list[dict[str, Any]]:
    return rollout(call(1), output(1), call(2), event("item_completed"), output(2), call(3),
                   output(3))


def test_the_cut_ends_with_the_calls_output_under_the_new_id() -> None:
    lines = three()
    cut = fork_codex.cut(data(lines), OLD, "call_2", "apply_patch", NEW, NAME)
    kept = [json.loads(line) for line in cut.data.splitlines()]
    assert kept[-1]["payload"] == {**lines[6]["payload"]}
    assert [e["ordinal"] for e in kept] == list(range(7))
    assert kept[0]["payload"]["id"] == kept[0]["payload"]["session_id"] == NEW
    assert all(e["payload"].get("thread_id", NEW) == NEW for e in kept)
    assert OLD not in cut.data.decode() and "call_3" not in cut.data.decode()
    assert (cut.name, cut.command, cut.cwd) == (NAME.replace(OLD, NEW), f"codex resume {NEW}",
                                               "/work/ws")


def test_a_shell_call_is_a_function_call() -> None:
    shell = item({"type": "function_call", "name": "exec_command", "call_id": "call_1",
                  "arguments": "{}"})
    done = item({"type": "function_call_output", "call_id": "call_1", "output": "ok"})
    cut = fork_codex.cut(data(rollout(shell, done)), OLD, "call_1", "Bash", NEW, NAME)
    assert cut.data.count(b"\n") == 4
    with pytest.raises(Refused, match="is a exec_command call, but its op records apply_patch"):
        fork_codex.cut(data(rollout(shell, done)), OLD, "call_1", "apply_patch", NEW, NAME)


@pytest.mark.parametrize("lines, says", [
    (rollout(call(1), output(1))[1:], "does not begin with session"),
    ([{**three()[0], "payload": {"id": OTHER}}, *three()[1:]], "does not begin with session"),
    (rollout(call(1), output(1), item({"type": "compacted", "message": "summary"}, "compacted")),
     "a compaction folded it away"),
    (rollout(call(1), output(1)), "The call call_2 is not in the session's rollout"),
    (rollout(call(2), call(2), output(2)), "appears 2 times"),
    (rollout(call(2)), "The output of call call_2 is not in"),
    (rollout(call(2), call(3), output(2), output(3)), "ran together with call_3"),
    (rollout(item({"type": "x", "thread_id": OTHER}, "event_msg"), call(2), output(2)),
     "names another session"),
])
def test_a_rollout_that_cannot_be_vouched_for_is_refused(lines: list[dict[str, Any]],
                                                         says: str) -> None:
    with pytest.raises(Refused, match=says):
        fork_codex.cut(data(lines), OLD, "call_2", "apply_patch", NEW, NAME)


def test_a_line_that_is_not_json_before_the_call_is_refused() -> None:
    raw = data(three()).split(b"\n")
    raw.insert(2, b'{"type": "event_msg", "pay')
    with pytest.raises(Refused, match="Line 3 of the rollout is not a JSON object"):
        fork_codex.cut(b"\n".join(raw), OLD, "call_2", "apply_patch", NEW, NAME)


@pytest.mark.parametrize("path", [f"/x/{OLD}.jsonl", f"/x/rollout-{OTHER}.jsonl",
                                  f"relative/rollout-1-{OLD}.jsonl"])
def test_a_path_that_is_not_the_sessions_rollout_is_refused(path: str) -> None:
    with pytest.raises(Refused, match="which is not Codex's rollout of it"):
        fork_codex.check_path(Path(path), OLD)
    fork_codex.check_path(Path(f"/x/{NAME}"), OLD)


def test_new_ids_are_time_ordered_uuids() -> None:
    ids = [uuid7() for _ in range(50)]
    assert all(i[14] == "7" and i[19] in "89ab" for i in ids)
    assert len(set(ids)) == 50
