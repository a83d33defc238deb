"""Files that history, a harness or a person names are read as untrusted input.

A cloned history can hold ``.claude/settings.json`` as a link to a file outside the work tree,
``.gemini`` as a link to an outside folder, or ``.gitspace/sessions/ID.json`` as a link to
``/dev/zero``; a harness names a transcript that may be a fifo; a person passes ``--args @FILE``.
Each is read by the one bounded reader (``storage/bounded.py``): regular files only, never
through a link, never blocking, never past a size cap. Every scenario ends sealed: ``git fsck
--strict`` clean, the status it started with, no lock left, nothing outside changed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import head
from hostile import (
    Link,
    cli,
    expected_failure,
    fifo,
    gitspace_argv,
    never_blocks,
    objects_hold,
    sealed,
    usage_failure,
    workspace,
)

SECRET = "s3cr3t-token-outside-the-work-tree"
OUTSIDE_SETTINGS = {"settings.json": json.dumps({"apiKey": SECRET}) + "\n"}


# -- settings files planted by history ------------------------------------------------------------


@pytest.mark.parametrize(("harness", "rel", "scope"), [
    ("claude-code", ".claude/settings.json", "project"),
    ("claude-code", ".claude/settings.local.json", "local"),
    ("codex", ".codex/hooks.json", "project"),
])
def test_hooks_install_refuses_a_settings_file_history_linked_outside(
        tmp_path: Path, harness: str, rel: str, scope: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n", rel: Link("{outside}/settings.json")},
                   OUTSIDE_SETTINGS) as (ws, outside), sealed(ws.root, outside):
        before = head(ws.root)
        for command in ("install", "uninstall"):
            proc = cli(ws.root, "hooks", command, harness, "--scope", scope)
            expected_failure(proc)
            # (a local settings file in history is refused for being tracked at all, first)
            assert "link" in proc.stderr or scope == "local" and "tracked" in proc.stderr, \
                proc.stderr
        assert head(ws.root) == before, "an op was recorded"
        assert os.path.islink(ws.root / rel), "the link was replaced"
        assert not objects_hold(ws.root, SECRET), "the outside secret is in the object store"
        status = cli(ws.root, "hooks", "status", "--json")
        assert SECRET not in status.stdout + status.stderr


def test_hooks_install_never_writes_through_a_folder_history_linked_outside(
        tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n", ".gemini": Link("{outside}/sub")}) as (
            ws, outside), sealed(ws.root, outside):
        before = head(ws.root)
        proc = cli(ws.root, "hooks", "install", "gemini-cli")
        expected_failure(proc)
        assert head(ws.root) == before
        assert not (outside.path / "sub" / "settings.json").exists()


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_settings_file_that_is_no_regular_file_is_refused_without_blocking(
        tmp_path: Path, kind: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n", ".gitignore": ".claude/\n"}) as (ws, outside), \
            sealed(ws.root, outside):
        target = ws.root / ".claude" / "settings.json"
        if kind == "fifo":
            fifo(target)
        else:
            target.parent.mkdir()
            os.symlink("/dev/zero", target)
        proc = never_blocks(gitspace_argv(ws.root, "hooks", "install", "claude-code"), ws.root)
        assert proc.returncode == 1, proc.stderr
        expected_failure(proc)


# -- what a harness names: the transcript -----------------------------------------------------------

SID = "5c0e4b1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b"


def _stop(root: Path, transcript: Path) -> bytes:
    return json.dumps({"session_id": SID, "transcript_path": str(transcript), "cwd": str(root),
                       "hook_event_name": "Stop", "prompt_id": "p-1"}).encode()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "link-outside", "over-cap"])
def test_the_stop_hook_reads_a_transcript_bounded_and_never_blocks(
        tmp_path: Path, kind: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}, {"t.jsonl": json.dumps({"secret": SECRET}) + "\n"}) as (
            ws, outside):
        folder = tmp_path / "home" / ".claude" / "projects" / "p"
        folder.mkdir(parents=True)
        transcript = folder / f"{SID}.jsonl"
        if kind == "fifo":
            fifo(transcript)
        elif kind == "dev-zero":
            os.symlink("/dev/zero", transcript)
        elif kind == "link-outside":
            os.symlink(outside.path / "t.jsonl", transcript)
        else:
            transcript.write_text((json.dumps({"type": "user", "text": "x" * 4096}) + "\n") * 400)
        env = {**os.environ, "GITSPACE_MAX_FILE_BYTES": str(1 << 20)}
        with sealed(ws.root, outside):
            proc = never_blocks(gitspace_argv(ws.root, "hook", "claude-code",
                                              "--commit-transcript"), ws.root,
                                stdin=_stop(ws.root, transcript), env=env)
            assert proc.returncode == 0, proc.stderr
            assert "not committed" in proc.stderr, proc.stderr
            assert "unexpected" not in proc.stderr, proc.stderr
            assert not objects_hold(ws.root, SECRET)
            # The lock was let go: an op after it runs.
            assert ws.call("create", {"path": "after.txt", "file_text": "x\n"}).ok
            ws.call("undo", {})


def test_the_stop_hook_still_commits_a_plain_transcript(tmp_path: Path) -> None:
    """The bound refuses what it must and nothing more: a regular file is committed."""
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside), sealed(ws.root, outside):
        transcript = tmp_path / f"{SID}.jsonl"
        transcript.write_text('{"type": "user", "message": "hello"}\n')
        proc = never_blocks(gitspace_argv(ws.root, "hook", "claude-code", "--commit-transcript"),
                            ws.root, stdin=_stop(ws.root, transcript))
        assert proc.returncode == 0 and "not committed" not in proc.stderr, proc.stderr
        assert (ws.root / "transcripts").is_dir()


# -- what history names: saved sessions -------------------------------------------------------------

SESSION = "01JF3Q7Z0A8K3M2N4P5R6S7T8V"


@pytest.mark.parametrize("kind", ["dev-zero", "link-outside", "fifo"])
def test_a_session_file_history_planted_is_read_bounded(tmp_path: Path, kind: str) -> None:
    from ui_server import fetch, serving

    outside_session = {"session.json": json.dumps({"format": 1, "id": SESSION, "task": SECRET,
                                                   "agent": None, "client": "x",
                                                   "scripted": True})}
    with workspace(tmp_path, {"a.txt": "a\n"}, outside_session) as (ws, outside):
        folder = ws.root / ".gitspace" / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{SESSION}.json"
        if kind == "fifo":
            fifo(target)
        else:
            os.symlink("/dev/zero" if kind == "dev-zero" else outside.path / "session.json",
                       target)
        with sealed(ws.root, outside):
            listed = never_blocks(gitspace_argv(ws.root, "sessions", "--json"), ws.root)
            assert listed.returncode == 0, listed.stderr
            rows = json.loads(listed.stdout)
            assert [r["status"] for r in rows] == ["damaged"], rows
            shown = never_blocks(gitspace_argv(ws.root, "sessions", "show", SESSION), ws.root)
            assert shown.returncode == 1 and "Traceback" not in shown.stderr, shown.stderr
            assert SECRET not in shown.stdout + shown.stderr
            with serving(ws.root) as base:
                for page in ("/sessions", f"/session/{SESSION}"):
                    status, body = fetch(base + page)
                    assert status in (200, 400, 404), (page, status)
                    assert SECRET not in body


# -- what a person names: --args @FILE ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "link", "over-cap"])
def test_args_from_a_file_are_read_bounded(tmp_path: Path, kind: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside), sealed(ws.root, outside):
        named = tmp_path / "args.json"
        if kind == "dev-zero":
            os.symlink("/dev/zero", named)
        elif kind == "fifo":
            fifo(named)
        elif kind == "link":
            (tmp_path / "real.json").write_text('{"path": "b.txt", "file_text": "b"}')
            os.symlink(tmp_path / "real.json", named)
        else:
            named.write_text(json.dumps({"path": "b.txt", "file_text": "x" * (65 << 20)}))
        before = head(ws.root)
        proc = never_blocks(gitspace_argv(ws.root, "call", "create", "--args", f"@{named}"),
                            ws.root)
        usage_failure(proc)
        assert head(ws.root) == before


def test_args_from_stdin_are_read_bounded(tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside), sealed(ws.root, outside):
        before = head(ws.root)
        with open("/dev/zero", "rb") as zero:
            proc = subprocess.run(gitspace_argv(ws.root, "call", "create", "--args", "-"),
                                  stdin=zero, capture_output=True, text=True, timeout=120)
        usage_failure(proc)
        assert "MiB" in proc.stderr
        assert head(ws.root) == before


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "link", "over-cap", "deep", "deep-refs"])
def test_a_returns_schema_from_a_file_is_read_bounded(tmp_path: Path, kind: str) -> None:
    """``run --returns FILE`` read the file whole, with no type check (``/dev/zero`` behind a
    link: the file test said no and it was read as JSON text, one over the cap: read whole), and
    a schema nested deeper than Python's stack, or referring through a long chain of ``$ref``,
    crashed with RecursionError. Each is refused (exit 1) before any model call."""
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside), sealed(ws.root, outside):
        named = tmp_path / "schema.json"
        if kind == "dev-zero":
            os.symlink("/dev/zero", named)
        elif kind == "fifo":
            fifo(named)
        elif kind == "link":
            (tmp_path / "real.json").write_text('{"type": "integer"}')
            os.symlink(tmp_path / "real.json", named)
        elif kind == "over-cap":
            named.write_text(json.dumps({"type": "string", "description": "x" * (65 << 20)}))
        elif kind == "deep":
            named.write_text('{"type": "array", "items": ' * 20_000 + "{}" + "}" * 20_000)
        else:
            defs = {f"a{i}": {"$ref": f"#/$defs/a{i + 1}"} for i in range(5_000)}
            named.write_text(json.dumps({"$defs": {**defs, "a5000": {"type": "integer"}},
                                         "$ref": "#/$defs/a0"}))
        before = head(ws.root)
        proc = never_blocks(gitspace_argv(ws.root, "run", "Count.", "--policy", "maze",
                                          "--returns", str(named)), ws.root)
        assert proc.returncode == 1, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr and "hint" in proc.stderr.lower(), proc.stderr
        assert "--returns" in proc.stderr or "returns" in proc.stderr, proc.stderr
        assert head(ws.root) == before and not (ws.root / ".gitspace").exists()
