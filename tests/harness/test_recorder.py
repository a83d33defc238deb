"""harness/recorder.py: one recorder for both places (a workspace gitspace owns, a person's own
checkout), fed payloads as Claude Code sends them through the hook's real entry point.

Every test runs in both places: what the recorder does is the same there, only where the ops go
differs (the branch, or the line beside the person's branch).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import git, ops
from hookcalls import LINE, PROGRAM, SID, own_repo, payload, run_hook, write

import gitspace
from gitspace.harness import install


class Place:
    """A checkout to record in, and how to read back what was recorded there."""

    def __init__(self, root: Path, ref: str, marks: Callable[[], list[str]]) -> None:
        self.root, self.ref, self.marks = root, ref, marks

    def harness_ops(self) -> list[Any]:
        return [op for op in ops(self.root, self.ref) if op.source == "harness"]

    def sources(self) -> list[tuple[str, str]]:
        return [(op.source, op.tool) for op in ops(self.root, self.ref)]


def _refs(root: Path, prefix: str) -> list[str]:
    out = git(root, "for-each-ref", "--format=%(refname)", prefix)
    return [ref[len(prefix):] for ref in out.split()]


@pytest.fixture(params=["workspace", "in place"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    if request.param == "workspace":
        root = tmp_path / "ws"
        gitspace.init(root).close()
        return Place(root, "main", lambda: _refs(root, "refs/tags/gitspace/"))
    root = own_repo(tmp_path / "repo")
    install.install("claude-code", None, root, tmp_path / "home", PROGRAM)
    return Place(root, LINE, lambda: _refs(root, "refs/gitspace/turns/"))


def twice(data: dict[str, Any]) -> None:
    """An event as two installs of the hooks deliver it: once from each settings file."""
    for _ in range(2):
        code, err = run_hook(data)
        assert code == 0 and "unexpected" not in err, err


def test_an_event_delivered_twice_is_recorded_once(place: Place) -> None:
    root = place.root
    twice(payload(root, "UserPromptSubmit", prompt_id="p-1"))
    a = {"file_path": str(root / "a.txt"), "content": "a\n"}
    twice(payload(root, "PreToolUse", "Write", a, "toolu_1"))
    write(root, "a.txt", "a\n")()
    twice(payload(root, "PostToolUse", "Write", a, "toolu_1"))
    bash = {"command": "echo b > b.txt"}
    twice(payload(root, "PreToolUse", "Bash", bash, "toolu_2"))
    write(root, "b.txt", "b\n")()
    twice(payload(root, "PostToolUse", "Bash", bash, "toolu_2"))
    twice(payload(root, "Stop", prompt_id="p-1"))
    assert [(op.tool, op.tool_use_id) for op in place.harness_ops()] == [
        ("Write", "toolu_1"), ("Bash", "toolu_2")]
    assert place.marks() == [f"claude-code-{SID[:8]}-turn-1"]  # turn 1, and one mark of it
    assert "turn 1 (prompt p-1)" in git(root, "log", "-1", "--format=%B", place.ref)


def test_a_call_reused_id_after_its_own_before_hook_is_recorded_again(place: Place) -> None:
    """Only a second delivery of the same event is dropped: a new call announces itself first,
    so a tool-use id seen before (a harness that reuses them, a person's 'gitspace record')
    never loses a call."""
    root = place.root
    for n in (1, 2):
        a = {"file_path": str(root / "a.txt"), "content": f"{n}\n"}
        run_hook(payload(root, "PreToolUse", "Write", a, "toolu_same"))
        write(root, "a.txt", f"{n}\n")()
        run_hook(payload(root, "PostToolUse", "Write", a, "toolu_same"))
    assert [op.tool_use_id for op in place.harness_ops()] == ["toolu_same", "toolu_same"]


def test_a_call_the_harness_never_reported_back_gets_its_own_op_at_the_turns_end(
        place: Place) -> None:
    """A failed apply_patch or a command still running when the harness handed back gets a
    before hook and no after hook: its change is its own op, with its own call id, not the
    person's."""
    root = place.root
    run_hook(payload(root, "UserPromptSubmit", prompt_id="p-1"))
    (root / "mine.txt").write_text("the person's, before the calls\n")
    w = {"file_path": str(root / "w.txt"), "content": "w\n"}
    run_hook(payload(root, "PreToolUse", "Write", w, "toolu_w"))
    write(root, "w.txt", "w\n")()
    bash = {"command": "make out.txt"}
    run_hook(payload(root, "PreToolUse", "Bash", bash, "toolu_b"))
    write(root, "out.txt", "made\n")()
    run_hook(payload(root, "Stop", prompt_id="p-1"))
    calls = {op.tool_use_id: op for op in place.harness_ops()}
    assert calls["toolu_w"].paths == ("w.txt",) and calls["toolu_b"].paths == ("out.txt",)
    assert calls["toolu_b"].args == bash
    body = git(root, "log", "--format=%B", place.ref)
    assert "sent no after hook for this call" in body
    theirs = [op for op in ops(root, place.ref) if op.source == "external"]
    assert any("mine.txt" in (op.args.get("paths") or ()) for op in theirs)
    assert not any("out.txt" in (op.args.get("paths") or ()) for op in theirs)


def test_two_turn_ends_at_once_make_one_mark(place: Place) -> None:
    """Two processes deliver the same Stop at the same moment (both installs): the mark is made
    under the lock the ops are recorded under, with a name chosen there: one mark, no error."""
    root = place.root
    run_hook(payload(root, "UserPromptSubmit", prompt_id="p-1"))
    code = ("import io, json, sys; from gitspace.harness import hook; "
            "err = io.StringIO(); "
            "hook.main(['hook', 'claude-code'], stdin=io.BytesIO(sys.argv[1].encode()), "
            "stdout=io.StringIO(), stderr=err); print(err.getvalue())")
    data = json.dumps(payload(root, "Stop", prompt_id="p-1"))
    procs = [subprocess.Popen([sys.executable, "-c", code, data], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=root) for _ in range(4)]
    said = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert not any("already exists" in out + err or "unexpected" in out + err
                   for out, err in said), said
    assert place.marks() == [f"claude-code-{SID[:8]}-turn-1"]


def test_overlapping_commands_share_what_changed_since_the_earliest_began(place: Place) -> None:
    root = place.root
    run_hook(payload(root, "PreToolUse", "Bash", {"command": "a"}, "toolu_a"))
    write(root, "from-a", "a\n")()
    run_hook(payload(root, "PreToolUse", "Bash", {"command": "b"}, "toolu_b"))
    write(root, "from-b", "b\n")()
    run_hook(payload(root, "PostToolUse", "Bash", {"command": "b"}, "toolu_b"))
    run_hook(payload(root, "PostToolUse", "Bash", {"command": "a"}, "toolu_a"))
    (op,) = place.harness_ops()
    assert op.tool_use_id == "toolu_b" and op.paths == ("from-a", "from-b")
    assert "Other commands ran at the same time (Bash toolu_a)" in git(
        root, "log", "-1", "--format=%B", place.ref)
