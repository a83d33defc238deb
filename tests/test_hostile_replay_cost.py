"""Replaying a forged harness op costs what replay allows, not what the forger chooses.

On a pull request's branch one forged op could make replay's re-doing of another harness's file
edit run out of memory or run for minutes: an Edit with an omitted ``old_string`` on a large file
built gigabytes of candidates (MemoryError); a ``replace_all`` of one character by 4,096 built a
text of gigabytes; one small ``apply_patch`` against a 200 KB file compared lines for minutes;
and a ``$blob`` argument naming a binary blob crashed replay (UnicodeDecodeError). Re-doing an op
now spends at most a budget set by the bytes the op recorded (``replay/budget.py``), and an op
over it, like one whose input cannot be read, is a divergence at that op: exit 1, never a crash
or a hang.

Replay runs as a person runs it, in a process whose address space is held to 1.5 GiB (what the
old code asked for is gigabytes more) and which must finish (``never_blocks``). Every scenario
ends sealed.
"""

from __future__ import annotations

import hashlib
import json
import resource
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import git, head
from hostile import gitspace_argv, never_blocks, sealed, workspace

MEMORY = 3 << 29  # 1.5 GiB of address space for the replaying process


def _held() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _replay(root: Path, start: str) -> dict[str, Any]:
    """``gitspace replay --from START --json`` in a process held to ``MEMORY``; its report."""
    argv = gitspace_argv(root, "replay", "--from", start, "--json")
    proc = subprocess.run(argv, cwd=root, capture_output=True, timeout=180, preexec_fn=_held)
    assert "Traceback" not in proc.stderr.decode(), proc.stderr.decode()[-2000:]
    assert proc.returncode == 1, (proc.returncode, proc.stderr.decode()[-2000:])
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def _record(root: Path, tool: str, args: dict[str, Any], effect: dict[str, bytes],
            agent: str = "claude-code") -> None:
    """A call recorded through ``gitspace record``, which believes what it is told: a forgery."""
    for rel, data in effect.items():
        (root / rel).write_bytes(data)
    entry = {"tool": tool, "agent": agent, "cwd": str(root), "paths": sorted(effect),
             "args": args}
    proc = never_blocks(gitspace_argv(root, "record"), root, stdin=json.dumps(entry).encode())
    assert proc.returncode == 0 and not proc.stderr, proc.stderr


def _omitted(data: bytes) -> dict[str, Any]:
    return {"$omitted": hashlib.sha1(data).hexdigest(), "bytes": len(data)}


def _holding(root: Path, rel: str, data: bytes) -> str:
    """``rel`` holding ``data``, recorded (a snapshot); the commit the replay starts from."""
    (root / rel).write_bytes(data)
    assert never_blocks(gitspace_argv(root, "snapshot"), root).returncode == 0
    assert git(root, "ls-tree", "--name-only", "HEAD", "--", rel).strip() == rel
    return head(root)


def test_an_omitted_old_string_on_a_large_file_is_no_memory_error(tmp_path: Path) -> None:
    big = b"a" * (1 << 20)  # every place looks the same: each could be where the edit began
    with workspace(tmp_path, {}) as (ws, outside):
        ws.close()
        start = _holding(ws.root, "big.txt", big)
    new = "a" * 4096  # (the longest string the ledger keeps whole)
    after = b"a" * 8192
    old = big[: len(big) - len(after) + len(new)]
    _record(ws.root, "Edit", {"file_path": "big.txt", "old_string": _omitted(old[:-1] + b"x"),
                              "new_string": new}, {"big.txt": after})
    with sealed(ws.root, outside, clean=True):
        d = _replay(ws.root, start)["divergence"]
        assert d["tool"] == "Edit" and "cannot be checked" in d["reason"], d["reason"]


def test_a_replace_all_that_would_build_gigabytes_is_no_memory_error(tmp_path: Path) -> None:
    with workspace(tmp_path, {}) as (ws, outside):
        ws.close()
        start = _holding(ws.root, "big.txt", b"a" * (1 << 20))
    _record(ws.root, "Edit", {"file_path": "big.txt", "old_string": "a", "new_string": "b" * 4096,
                              "replace_all": True}, {"big.txt": b"not what it gives\n"})
    with sealed(ws.root, outside, clean=True):
        d = _replay(ws.root, start)["divergence"]
        assert "cannot be checked" in d["reason"] and "units of work" in d["reason"], d["reason"]


def test_a_small_apply_patch_against_a_large_file_is_no_hang(tmp_path: Path) -> None:
    with workspace(tmp_path, {}) as (ws, outside):
        ws.close()
        start = _holding(ws.root, "big.txt", b"a\n" * 100_000)  # 200 KB
    patch = "\n".join(["*** Begin Patch", "*** Update File: big.txt", "@@",
                       *[" a"] * 500, "-zzz", "+yyy", "*** End Patch"])  # about 1.5 KB
    _record(ws.root, "apply_patch", {"command": patch}, {"big.txt": b"a\n" * 99_999},
            agent="codex")
    with sealed(ws.root, outside, clean=True):
        d = _replay(ws.root, start)["divergence"]
        assert d["tool"] == "apply_patch" and "cannot be checked" in d["reason"], d["reason"]


@pytest.mark.parametrize("which", ["binary", "not written"])
def test_a_blob_argument_that_is_no_text_the_op_wrote_is_a_divergence(
        tmp_path: Path, which: str) -> None:
    with workspace(tmp_path, {}) as (ws, outside):
        ws.close()
        start = _holding(ws.root, "other.bin", b"\xff\xfe\x00binary" * 1000)
    written = b"\xff\xfe\x00\x01 no UTF-8 here" * 300
    elsewhere = git(ws.root, "rev-parse", "HEAD:other.bin").strip()
    sha = git(ws.root, "hash-object", "-w", "--stdin", input=written).strip() \
        if which == "binary" else elsewhere
    size = len(written) if which == "binary" else len(b"\xff\xfe\x00binary" * 1000)
    _record(ws.root, "Write", {"file_path": "w.bin", "content": {"$blob": sha, "bytes": size}},
            {"w.bin": written})
    with sealed(ws.root, outside, clean=True):
        d = _replay(ws.root, start)["divergence"]
        says = "not UTF-8 text" if which == "binary" else "none of the files it lists"
        assert d["tool"] == "Write" and says in d["reason"], d["reason"]


def test_an_honest_edit_on_the_same_large_file_still_re_executes(tmp_path: Path) -> None:
    """The budget is no cap on real work: the same large file, edited as Claude Code edits."""
    block = b"".join(b"line %d of an honest file\n" % i for i in range(30_000))  # ~850 KB
    with workspace(tmp_path, {}) as (ws, outside):
        ws.close()
        start = _holding(ws.root, "big.txt", block)
    old = b"".join(b"line %d of an honest file\n" % i for i in range(1000, 1400))  # > 4,096
    _record(ws.root, "Edit", {"file_path": "big.txt", "old_string": _omitted(old),
                              "new_string": "four hundred lines, gone\n"},
            {"big.txt": block.replace(old, b"four hundred lines, gone\n")})
    with sealed(ws.root, outside, clean=True):
        proc = never_blocks(gitspace_argv(ws.root, "replay", "--from", start, "--json"), ws.root)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert json.loads(proc.stdout)["reexecuted"] == 1
