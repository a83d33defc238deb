"""Every bad input is an expected error: a sentence and a hint, exit 1, no commit, nothing written.

Each input is tried through the three doors people use: the Python API (``Workspace.call``), the
CLI (``gitspace call``, a fresh process) and MCP (a real ``gitspace mcp`` stdio server fed raw
JSON-RPC lines, as any client would send them). The disk really fills (a small tmpfs), and files
really are read-only (root gives up its permission override through setpriv).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import head
from hostile import Outside, cli, expected_failure, fsck, sealed, usage_failure, workspace

import gitspace
from gitspace.errors import GitspaceError

NEST = 50_000  # far past Python's recursion limit and the JSON parser's; fits one argv string


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _raw(value: Any) -> str:
    """JSON text for ``value``, surrogates escaped and deep nesting written out by hand."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_raw(v)}" for k, v in value.items()) + "}"
    if value == "<nested>":
        return "[" * NEST + '"x"' + "]" * NEST
    return json.dumps(value)


BAD: dict[str, tuple[str, dict[str, Any], str]] = {
    "surrogate in text": ("create", {"path": "s.txt", "file_text": "ok \ud800 ok"}, "surrogate"),
    "surrogate in path": ("create", {"path": "a\udc80.txt", "file_text": "x"}, "surrogate"),
    "surrogate in a key": ("create", {"path": "s.txt", "file_text": "x", "\udfff": 1}, "surrogate"),
    "surrogate in a message": ("checkpoint", {"name": "c1", "message": "\ud83d"}, "surrogate"),
    "surrogate in a script arg": ("append_entry", {"path": "j.jsonl", "text": "\udc00"},
                                  "surrogate"),
    "NUL in file_text": ("create", {"path": "n.txt", "file_text": "a\0b"}, "NUL"),
    "NUL appended": ("append", {"path": "a.txt", "text": "\0"}, "NUL"),
    "NUL in new_str": ("str_replace", {"path": "a.txt", "old_str": "a", "new_str": "\0"}, "NUL"),
    "NUL in a memory": ("memory", {"command": "create", "path": "/memories/n.md",
                                   "file_text": "\0"}, "NUL"),
    "NUL in a plan step": ("plan_add", {"step": "a\0b"}, "NUL"),
    "path over 4096 bytes": ("create", {"path": "a/" * 2100 + "x", "file_text": "x"}, "longer"),
    "path past PATH_MAX": ("create", {"path": "<past PATH_MAX>", "file_text": "x"}, "limit"),
    "path 100 folders deep": ("create", {"path": "a/" * 100 + "x", "file_text": "x"}, "deep"),
    "deep JSON": ("create", {"path": "d.txt", "file_text": "<nested>"}, "deep"),
    "deep JSON for a script": ("peek", {"path": "<nested>"}, "deep"),
    "huge checkpoint message": ("checkpoint", {"name": "c2", "message": "m" * 10_000}, "500"),
    "a pattern git cannot use": ("search", {"pattern": "(unclosed"}, "pattern"),
    "a 100,000-character pattern": ("search", {"pattern": "a" * 100_000}, "pattern"),
    "a line number of 31 digits": ("insert", {"path": "a.txt", "insert_line": 10**30,
                                              "insert_text": "x"}, "insert_line"),
    "a folder moved into itself": ("rename", {"old_path": "a.txt", "new_path": "a.txt/b"},
                                   "itself"),
}


def _api_args(args: dict[str, Any]) -> dict[str, Any]:
    return {k: _nested(NEST) if v == "<nested>" else v for k, v in args.items()}


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[tuple[gitspace.Workspace, Outside]]:
    with workspace(tmp_path, {"a.txt": "a\n"}) as made:
        yield made


class Stdio:
    """A real ``gitspace mcp`` server on stdio, spoken to in raw JSON-RPC lines."""

    def __init__(self, root: Path, prefix: tuple[str, ...] = ()) -> None:
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "gitspace", "-C", str(root), "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.next_id = 1
        reply = self.request("initialize", '{"protocolVersion":"2025-06-18","capabilities":{},'
                             '"clientInfo":{"name":"raw","version":"1"}}')
        assert "result" in reply, reply
        self.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: str) -> dict[str, Any]:
        self.next_id += 1
        self.send(f'{{"jsonrpc":"2.0","id":{self.next_id},"method":"{method}","params":{params}}}')
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        assert ready, f"the server did not answer {method} (it hangs the client)"
        reply = json.loads(self.proc.stdout.readline())
        assert reply.get("id") == self.next_id, reply
        return dict(reply)

    def call(self, tool: str, args_json: str) -> tuple[bool, str]:
        """(is an error, the text) of a tools/call, however the server reported it."""
        reply = self.request("tools/call", f'{{"name":{json.dumps(tool)},"arguments":{args_json}}}')
        if "error" in reply:
            return True, str(reply["error"]["message"])
        result = reply["result"]
        return bool(result.get("isError")), "".join(c.get("text", "") for c in result["content"])

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stderr.read()


def _past_path_max(root: Path) -> str:
    """A path short enough on its own, too long once under ``root`` (PATH_MAX is 4096)."""
    want = 4096 - len(os.fsencode(root))
    parts = ["d" * 250] * (want // 251) + ["e" * max(1, want % 251)]
    return "/".join(parts)


def _refused_everywhere(ws: gitspace.Workspace, tool: str, args: dict[str, Any], phrase: str,
                        mcp: Stdio) -> None:
    tip = head(ws.root)
    args = {k: _past_path_max(ws.root) if v == "<past PATH_MAX>" else v for k, v in args.items()}
    result = ws.call(tool, _api_args(args))
    assert not result.ok and isinstance(result.error, GitspaceError), result
    assert phrase.lower() in result.text.lower() and result.error.hint, result.text
    assert len(result.text) < 2000, f"the error echoes the input back: {len(result.text)} chars"
    out = cli(ws.root, "call", tool, "--args", _raw(args))
    expected_failure(out)
    assert phrase.lower() in out.stderr.lower(), out.stderr
    is_error, text = mcp.call(tool, _raw(args))
    assert is_error and phrase.lower() in text.lower() and "hint" in text.lower(), text
    assert head(ws.root) == tip, f"{tool} committed"


def test_bad_input_is_an_expected_error_through_every_door(
        scene: tuple[gitspace.Workspace, Outside]) -> None:
    """One server for every case (a server start costs seconds); each case is sealed alone."""
    ws, outside = scene
    mcp = Stdio(ws.root)
    try:
        for case, (tool, args, phrase) in sorted(BAD.items()):
            with sealed(ws.root, outside):
                try:
                    _refused_everywhere(ws, tool, args, phrase, mcp)
                except AssertionError as e:
                    raise AssertionError(f"{case}: {e}") from None
        assert mcp.call("view", '{"path": "a.txt"}')[0] is False  # it still serves
    finally:
        err = mcp.close()
    assert "Traceback" not in err, err


def test_cli_arguments_that_are_not_text(scene: tuple[gitspace.Workspace, Outside]) -> None:
    """Bytes that are not UTF-8 on the command line, and --args that is not an object."""
    ws, outside = scene
    with sealed(ws.root, outside):
        proc = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(ws.root),
                               "checkpoint", b"\xff\xfe".decode("utf-8", "surrogateescape")],
                              capture_output=True, text=True, env=dict(os.environ),
                              errors="surrogateescape")
        expected_failure(proc)
        usage_failure(cli(ws.root, "call", "view", "--args", "[]"))
        usage_failure(cli(ws.root, "call", "view", "--args", '{"path": "a.txt"'))


# -- the machine says no ----------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MiB file system (tmpfs): CI runs as root, so it can mount one."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def _fill(disk: Path) -> Path:
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 16, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_is_an_expected_error(small_disk: Path, tmp_path: Path) -> None:
    root = small_disk / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "journal").mkdir()
    (root / "journal" / "log.jsonl").write_text("")
    ws = gitspace.init(root, agent="tester")
    mcp = Stdio(root)  # (started before the disk fills: Python needs no disk to run)
    outside = Outside(tmp_path / "outside")
    filler = _fill(small_disk)
    try:
        with sealed(root, outside):
            calls = [("create", {"path": "big.txt", "file_text": "y" * 100_000}),
                     ("str_replace", {"path": "a.txt", "old_str": "a", "new_str": "b" * 60_000}),
                     ("checkpoint", {"name": "cp", "message": "on a full disk"}),
                     ("branch", {"name": "b1", "switch": False}),
                     ("append_entry", {"path": "journal/log.jsonl", "text": "x" * 3000})]
            for tool, args in calls:
                tip = head(root)
                result = ws.call(tool, args)
                assert not result.ok and result.error is not None and result.error.hint, result
                assert "full" in result.text or "No space" in result.text, result.text
                out = cli(root, "call", tool, "--args", json.dumps(args))
                expected_failure(out)
                is_error, text = mcp.call(tool, json.dumps(args))
                assert is_error and ("full" in text or "No space" in text), text
                assert head(root) == tip
            filler.unlink()  # (fsck and status need a little room)
    finally:
        filler.unlink(missing_ok=True)
        err = mcp.close()
        ws.close()
    assert "Traceback" not in err, err
    assert gitspace.open(root).call("create", {"path": "big.txt", "file_text": "y\n"}).ok
    fsck(root)


def _no_override() -> tuple[str, ...]:
    """Run as root without the permission override (CAP_DAC_OVERRIDE), so modes apply."""
    if os.geteuid() != 0:
        return ()
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--")


API = """
import json, sys, gitspace
ws = gitspace.open(sys.argv[1], agent="tester")
r = ws.call(sys.argv[2], json.loads(sys.argv[3]))
print(json.dumps({"ok": r.ok, "text": r.text, "hint": bool(r.error and r.error.hint)}))
"""


def test_read_only_files_are_an_expected_error(scene: tuple[gitspace.Workspace, Outside]) -> None:
    ws, outside = scene
    root = ws.root
    assert ws.call("create", {"path": "notes/todo.md", "file_text": "- [ ] one\n"}).ok
    mcp = Stdio(root, _no_override())
    try:
        (root / "notes" / "todo.md").chmod(0o444)
        (root / "notes").chmod(0o555)
        with sealed(root, outside):
            for tool, args in [("create", {"path": "notes/new.md", "file_text": "x\n"}),
                               ("str_replace", {"path": "notes/todo.md", "old_str": "one",
                                                "new_str": "two"}),
                               ("delete", {"path": "notes/todo.md"}),
                               ("rename", {"old_path": "notes/todo.md", "new_path": "t.md"})]:
                tip = head(root)
                api = subprocess.run([*_no_override(), sys.executable, "-c", API, str(root), tool,
                                      json.dumps(args)], capture_output=True, text=True)
                assert api.returncode == 0, api.stderr
                reply = json.loads(api.stdout)
                assert not reply["ok"] and reply["hint"], reply
                assert "permission" in reply["text"].lower(), reply["text"]
                out = cli(root, "call", tool, "--args", json.dumps(args), prefix=_no_override())
                expected_failure(out)
                is_error, text = mcp.call(tool, json.dumps(args))
                assert is_error and "permission" in text.lower(), text
                assert head(root) == tip and (root / "notes" / "todo.md").read_text() == "- [ ] one\n"
    finally:
        (root / "notes").chmod(0o755)
        (root / "notes" / "todo.md").chmod(0o644)
        err = mcp.close()
    assert "Traceback" not in err, err
    fsck(root)
