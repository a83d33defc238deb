"""Many hook calls at once, as parallel subagents make them.

Claude Code runs the tool calls of parallel subagents (and a model's parallel tool calls) at the
same time, each with its own PreToolUse and PostToolUse hook process. Here several file tools and
several shell commands of one session start together, each changes its own files, and their after
hooks run together: every call is recorded exactly once, as an op of its own with exactly its
files (overlapping shells may share one op, which says so), nothing is lost, nothing is counted
twice, and the hook's notes are all retired. It ends sealed: ``git fsck --strict``, a clean
status, no lock, nothing outside changed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import ops
from hostile import gitspace_argv, sealed, workspace

SID = "5c0e4b1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b"
FILE_CALLS = 6
LINE = "refs/gitspace/lines/main"
PROGRAM = f"{sys.executable} -m gitspace"
SHELLS = 3


def _body(root: Path, event: str, tool: str, tool_input: dict[str, Any], use_id: str,
          session: str = SID) -> bytes:
    return json.dumps({"session_id": session, "cwd": str(root), "hook_event_name": event,
                       "transcript_path": f"/nonexistent/{session}.jsonl", "tool_name": tool,
                       "tool_input": tool_input, "tool_use_id": use_id}).encode()


def _all_at_once(root: Path, bodies: list[bytes]) -> list[str]:
    """Start one hook process per body, all before any is waited for; their stderr."""
    procs = [subprocess.Popen(gitspace_argv(root, "hook", "claude-code"), cwd=root,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in bodies]
    for proc, body in zip(procs, bodies, strict=True):
        assert proc.stdin is not None
        proc.stdin.write(body)
        proc.stdin.close()
    said = []
    for proc in procs:
        assert proc.wait(timeout=180) == 0
        assert proc.stderr is not None and proc.stdout is not None
        err = proc.stderr.read().decode()
        proc.stderr.close()
        proc.stdout.close()
        assert "unexpected" not in err and "Traceback" not in err, err
        assert "nothing was lost" not in err, f"a hook call failed: {err}"
        said.append(err)
    return said


def test_parallel_tool_calls_are_each_recorded_once(tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        root = ws.root
        files = [(f"toolu_w{i}", {"file_path": str(root / f"sub{i}" / "out.txt"),
                                  "content": f"from subagent {i}\n"}) for i in range(FILE_CALLS)]
        shells = [(f"toolu_b{i}", {"command": f"echo {i} > shell{i}.txt"}) for i in range(SHELLS)]
        before = len(ops(root))
        with sealed(ws.root, outside, clean=True):
            _all_at_once(root, [_body(root, "PreToolUse", "Write", args, uid)
                                for uid, args in files]
                         + [_body(root, "PreToolUse", "Bash", args, uid) for uid, args in shells])
            for i in range(FILE_CALLS):  # what each call did, while all were running
                (root / f"sub{i}").mkdir()
                (root / f"sub{i}" / "out.txt").write_text(f"from subagent {i}\n")
            for i in range(SHELLS):
                (root / f"shell{i}.txt").write_text(f"{i}\n")
            _all_at_once(root, [_body(root, "PostToolUse", "Write", args, uid)
                                for uid, args in files]
                         + [_body(root, "PostToolUse", "Bash", args, uid) for uid, args in shells])
        recorded = ops(root)[before:]
        by_call = {op.tool_use_id: op for op in recorded if op.source == "harness"}
        for uid, args in files:
            op = by_call.get(uid)
            assert op is not None, f"the call {uid} was not recorded: {recorded}"
            rel = Path(args["file_path"]).relative_to(root).as_posix()
            assert op.paths == (rel,), (uid, op.paths)
        shell_paths = [p for op in recorded if op.tool == "Bash" for p in op.paths]
        assert sorted(shell_paths) == [f"shell{i}.txt" for i in range(SHELLS)], shell_paths
        everything = [p for op in recorded for p in op.paths]
        assert len(everything) == len(set(everything)), f"a change was counted twice: {recorded}"
        assert not [op for op in recorded if op.source == "external"], recorded
        inflight = root / ".git" / "gitspace" / "harness" / "inflight"
        assert not inflight.exists() or not list(inflight.iterdir())
        assert not (root / ".git" / "gitspace" / "harness" / "missed").exists()


def test_parallel_sessions_each_end_their_own_turn(tmp_path: Path) -> None:
    """Subagents of different sessions at once; one session's turn end forgets only its own
    calls, never another session's that is still running."""
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        root = ws.root
        other = "9d9d9d9d-0000-4000-8000-000000000000"
        write = {"file_path": str(root / "late.txt"), "content": "late\n"}
        _all_at_once(root, [_body(root, "PreToolUse", "Write", write, "toolu_late", other)])
        stop = json.dumps({"session_id": SID, "cwd": str(root),
                           "hook_event_name": "Stop"}).encode()
        _all_at_once(root, [stop])
        (root / "late.txt").write_text("late\n")
        with sealed(ws.root, outside, clean=True):
            _all_at_once(root, [_body(root, "PostToolUse", "Write", write, "toolu_late", other)])
        op = ops(root)[-1]
        assert (op.source, op.tool_use_id, op.paths) == ("harness", "toolu_late", ("late.txt",))


def test_parallel_tool_calls_in_place_are_each_recorded_once(tmp_path: Path) -> None:
    """The same storm in a person's own checkout (recorded in place): every call is one op on
    the line with exactly its files, and the person's HEAD, refs, index (bytes and stat), stash
    and tags are as they were; their status gains only what the calls made."""
    from hostile import Outside, fsck, status
    from user_repo import make_user_repo, users_own

    from gitspace.harness import install

    outside = Outside(tmp_path / "outside")
    root = make_user_repo(tmp_path / "repo")
    install.install("claude-code", None, root, tmp_path / "home", PROGRAM)
    files = [(f"toolu_w{i}", {"file_path": str(root / f"sub{i}" / "out.txt"),
                              "content": f"from subagent {i}\n"}) for i in range(FILE_CALLS)]
    shells = [(f"toolu_b{i}", {"command": f"echo {i} > shell{i}.txt"}) for i in range(SHELLS)]
    own, said = users_own(root), set(status(root).splitlines())
    _all_at_once(root, [_body(root, "PreToolUse", "Write", args, uid) for uid, args in files]
                 + [_body(root, "PreToolUse", "Bash", args, uid) for uid, args in shells])
    start = len(ops(root, LINE))
    for i in range(FILE_CALLS):
        (root / f"sub{i}").mkdir()
        (root / f"sub{i}" / "out.txt").write_text(f"from subagent {i}\n")
    for i in range(SHELLS):
        (root / f"shell{i}.txt").write_text(f"{i}\n")
    _all_at_once(root, [_body(root, "PostToolUse", "Write", args, uid) for uid, args in files]
                 + [_body(root, "PostToolUse", "Bash", args, uid) for uid, args in shells])
    recorded = ops(root, LINE)[start:]
    by_call = {op.tool_use_id: op for op in recorded if op.source == "harness"}
    for uid, args in files:
        assert uid in by_call, f"the call {uid} was not recorded: {recorded}"
        assert by_call[uid].paths == (Path(args["file_path"]).relative_to(root).as_posix(),)
    shell_paths = sorted(p for op in recorded if op.tool == "Bash" for p in op.paths)
    assert shell_paths == [f"shell{i}.txt" for i in range(SHELLS)], shell_paths
    everything = [p for op in recorded for p in op.paths]
    assert len(everything) == len(set(everything)), f"a change was counted twice: {recorded}"
    assert not [op for op in recorded if op.source == "external"], recorded
    after = users_own(root)
    for key in ("HEAD", "refs", "index", "index stat", "stash", "tags"):
        assert after[key] == own[key], key
    made = ({f"?? sub{i}/out.txt" for i in range(FILE_CALLS)}
            | {f"?? shell{i}.txt" for i in range(SHELLS)})
    assert set(status(root).splitlines()) == said | made
    fsck(root)
    outside.unchanged()
