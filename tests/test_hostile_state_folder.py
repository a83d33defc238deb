"""Nothing under ``.git/gitspace/`` is read or written through a link, or read without a bound.

gitspace keeps its state there: the op journal, the op index (``opindex.sqlite``), the hook's
notes (``harness/``), the owned-tip and agent marks, the script cache, the merge and sync
journals, what an undone script left (``undone/``). Another program (or a repository copied from
elsewhere) can leave a link, a fifo or a device at any of those names. Every state file goes
through ``storage/statefiles.py``: folders reached without following a link, files read by the
bounded reader, written by a fresh temporary file and a rename. Each scenario ends sealed.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import git, head, op_ids
from hostile import fifo, gitspace_argv, never_blocks, sealed, workspace

SID = "5c0e4b1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b"


def _outside_db(path: Path) -> None:
    """A database of the user's own, outside the repository (a browser's history, say)."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
        db.execute("INSERT INTO notes VALUES ('the user''s own database')")
    db.close()


@pytest.mark.parametrize("name", ["opindex.sqlite", "opindex.sqlite-journal"])
def test_a_linked_op_index_is_never_written_through(tmp_path: Path, name: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        for i in range(3):
            assert ws.call("create", {"path": f"f{i}.txt", "file_text": f"{i}\n"}).ok
        first = op_ids(ws.root)[1]
        state = ws.root / ".git" / "gitspace"
        (state / "opindex.sqlite").unlink(missing_ok=True)
        target = outside.path / "app.sqlite"
        _outside_db(target)
        outside.settled()
        os.symlink(target, state / name)
        with sealed(ws.root, outside):
            shown = never_blocks(gitspace_argv(ws.root, "show", first), ws.root)
            assert shown.returncode == 0 and first in shown.stdout, shown.stderr
            undone = never_blocks(gitspace_argv(ws.root, "undo", "--op", first), ws.root)
            assert undone.returncode == 0, undone.stderr
            assert not (ws.root / "f0.txt").exists()
            ws.call("undo", {})  # the undo's own undo: the status the scenario began with
        assert os.path.islink(state / name), "the link was removed (it may be the user's)"


# Every state file gitspace reads, and a command that reads it.
STATE_FILES = {
    "journal.json": "snapshot",
    "owned-tip": "before-hook",
    "harness/missed": "after-hook",
    "harness/inflight/x.json": "after-hook",
    "sync-journal.json": "sync",
}


def _hook(root: Path, event: str) -> subprocess.CompletedProcess[str]:
    call = {"session_id": SID, "cwd": str(root), "hook_event_name": event, "tool_name": "Write",
            "tool_use_id": "toolu_1", "tool_input": {"file_path": str(root / "a.txt"),
                                                     "content": "a\n"}}
    return never_blocks(gitspace_argv(root, "hook", "claude-code"), root,
                        stdin=json.dumps(call).encode())


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("rel", sorted(STATE_FILES))
def test_a_state_file_that_is_no_regular_file_never_blocks_a_command(
        tmp_path: Path, rel: str, kind: str) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        assert ws.call("create", {"path": "b.txt", "file_text": "b\n"}).ok
        git(ws.root, "init", "-q", "--bare", str(tmp_path / "remote.git"))
        git(ws.root, "remote", "add", "origin", str(tmp_path / "remote.git"))
        target = ws.root / ".git" / "gitspace" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        if kind == "fifo":
            fifo(target)
        else:
            os.symlink("/dev/zero", target)
        with sealed(ws.root, outside):
            command = STATE_FILES[rel]
            if command.endswith("hook"):
                proc = _hook(ws.root, "PreToolUse" if command == "before-hook" else "PostToolUse")
                assert proc.returncode == 0, proc.stderr
            else:
                proc = never_blocks(gitspace_argv(ws.root, command), ws.root)
                assert proc.returncode in (0, 1), proc.stderr
            assert "Traceback" not in proc.stderr and "unexpected" not in proc.stderr, proc.stderr
            if proc.returncode == 1:
                assert "hint" in proc.stderr.lower()
            assert os.path.lexists(target), "what stood there was removed (it may be the user's)"
            target.unlink()  # (the scenario's own plant: what the closing checks look for)


def test_a_link_at_the_journals_temporary_name_is_never_written_through(tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        state = ws.root / ".git" / "gitspace"
        os.symlink(outside.path / "victim.txt", state / "journal.tmp")
        with sealed(ws.root, outside):
            before = head(ws.root)
            result = ws.call("create", {"path": "b.txt", "file_text": "b\n"})
            assert result.ok, result.text
            assert head(ws.root) != before
            ws.call("undo", {})


# A read-only script that writes anyway: what it wrote is set aside in undone/, then undone.
VANDAL = ("#!/bin/sh\n# ---gitspace---\n# name: vandal\n# description: Looks, and writes.\n"
          "# example: {}\n# mutates: false\n# args: {\"type\": \"object\"}\n# ---\n"
          "echo changed > a.txt\n")


@pytest.mark.parametrize("folder", ["harness", "cache", "undone"])
def test_a_state_folder_linked_outside_is_refused_not_followed(
        tmp_path: Path, folder: str) -> None:
    worklog = json.dumps({"ts": "2024-01-01T00:00:00Z", "text": "e", "tags": []}) + "\n"
    with workspace(tmp_path, {"a.txt": "a\n", "worklog.jsonl": worklog,
                              "constraints/vandal": VANDAL}) as (ws, outside):
        (ws.root / "constraints" / "vandal").chmod(0o755)
        ws.snapshot()
        state = ws.root / ".git" / "gitspace"
        if (state / folder).exists():
            shutil.rmtree(state / folder)
        os.symlink(outside.path / "sub", state / folder)
        with sealed(ws.root, outside):
            if folder == "harness":
                proc = _hook(ws.root, "PreToolUse")
                assert proc.returncode == 0 and "not a folder" in proc.stderr, proc.stderr
                assert "Traceback" not in proc.stderr
            elif folder == "cache":
                result = ws.call("peek", {"path": "worklog.jsonl"})
                assert result.ok or "not a folder" in result.text, result.text
            else:
                result = ws.call("vandal", {})
                assert not result.ok and "not a folder" in result.text, result.text
                assert (ws.root / "a.txt").read_text() == "a\n", "the script ran anyway"


def test_the_state_folder_swapped_for_a_link_while_open_is_never_written_through(
        tmp_path: Path) -> None:
    """A long-lived process (an MCP server, ``watch``) opened the workspace while
    ``.git/gitspace`` was a folder; then a link to an outside folder stands there. Its lock
    (``lock``, made if missing) and journal (removed after each op) are reached without following
    it: the op is refused, and the outside folder, which holds a ``journal.json`` of its own,
    gains and loses nothing."""
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        (outside.path / "sub" / "journal.json").write_text("the user's own file\n")
        outside.settled()
        state = ws.root / ".git" / "gitspace"
        aside = ws.root / ".git" / "gitspace-aside"
        with sealed(ws.root, outside):
            state.rename(aside)
            state.symlink_to(outside.path / "sub")
            result = ws.call("create", {"path": "b.txt", "file_text": "b\n"})
            assert not result.ok and "not a folder" in result.text, result.text
            state.unlink()
            aside.rename(state)
        assert ws.call("create", {"path": "b.txt", "file_text": "b\n"}).ok  # the folder back


@pytest.mark.parametrize("journal", [
    "[1, 2]",
    '{"moves": [["refs/../../../../outside/victim", null, null]], "since": 0}',
    '{"moves": [["refs/heads/main", 7, null]], "paths": [1]}',
])
def test_a_journal_gitspace_never_wrote_is_refused_and_acted_on_in_no_way(
        tmp_path: Path, journal: str) -> None:
    """Recovery finishes the change a journal names, and first removes the lock files of its
    refs. One that is not a journal gitspace writes (a crash never leaves one: it is written
    whole, by rename) crashed every command, or named a "lock" outside the ref store to
    remove. Every command now refuses with a sentence, and the journal and the outside stay."""
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        (outside.path / "victim.lock").write_text("the user's own file\n")
        outside.settled()
        ws.close()
        path = ws.root / ".git" / "gitspace" / "journal.json"
        path.write_text(journal)
        tip = head(ws.root)
        with sealed(ws.root, outside):
            proc = never_blocks(gitspace_argv(ws.root, "snapshot"), ws.root)
            assert proc.returncode == 1, (proc.returncode, proc.stderr)
            assert "is not an op journal gitspace wrote" in proc.stderr, proc.stderr
            assert "Traceback" not in proc.stderr and "hint" in proc.stderr.lower()
            assert path.read_text() == journal and head(ws.root) == tip
            path.unlink()  # (the scenario's own plant: what the closing checks look for)
