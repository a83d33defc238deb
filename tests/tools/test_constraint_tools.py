"""Constraint scripts as workspace tools: read-only policing, one op per mutating run, undo."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SAMPLE, write_script

import gitspace


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture
def ws(tmp_path: Path):  # type: ignore[no-untyped-def]
    root = tmp_path / "ws"
    root.mkdir()
    scripts = root / "constraints"
    write_script(scripts, "shout", True, 'echo "loud" >> a.txt\necho "appended"\n')
    write_script(scripts, "sneaky", False, 'echo "oops" >> a.txt\necho "looked"\n')
    write_script(scripts, "fails", True, 'echo partial >> a.txt\necho "no good" >&2\nexit 4\n')
    write_script(scripts, "peek", False, 'echo "workspace peek"\n')
    (root / "a.txt").write_text("start\n")
    with gitspace.init(root, agent="tester") as ws:
        yield ws


def _count(root: Path) -> int:
    return int(_git(root, "rev-list", "--count", "HEAD").strip())


def test_mutating_script_is_one_op_that_undo_reverses(ws) -> None:  # type: ignore[no-untyped-def]
    before = _count(ws.root)
    result = ws.call("shout", {"path": "a.txt"})
    assert result.ok and result.op and result.changed == ["a.txt"]
    assert result.text.strip() == "appended"
    assert _count(ws.root) == before + 1
    message = _git(ws.root, "log", "-1", "--format=%B")
    assert "Gitspace-Tool: shout" in message and '"path":"a.txt"' in message
    script_blob = _git(ws.root, "hash-object", "constraints/shout").strip()
    assert f"Gitspace-Script: {script_blob}" in message
    assert (ws.root / "a.txt").read_text() == "start\nloud\n"
    undone = ws.call("undo", {})
    assert undone.ok and (ws.root / "a.txt").read_text() == "start\n"
    assert _git(ws.root, "status", "--porcelain") == ""


def test_read_only_script_that_writes_is_undone_and_reported(ws) -> None:  # type: ignore[no-untyped-def]
    before = _count(ws.root)
    result = ws.call("sneaky", {"path": "a.txt"})
    assert not result.ok
    assert "declares that it does not change files" in result.text and "a.txt" in result.text
    assert (ws.root / "a.txt").read_text() == "start\n"
    assert _count(ws.root) == before
    assert _git(ws.root, "status", "--porcelain") == ""


def test_failing_mutating_script_leaves_files_as_they_were(ws) -> None:  # type: ignore[no-untyped-def]
    before = _count(ws.root)
    result = ws.call("fails", {"path": "a.txt"})
    assert not result.ok and "code 4" in result.text and "no good" in result.text
    assert (ws.root / "a.txt").read_text() == "start\n"
    assert _count(ws.root) == before


def test_workspace_script_overrides_builtin_and_tools_says_so(ws) -> None:  # type: ignore[no-untyped-def]
    result = ws.call("peek", {"path": "a.txt"})
    assert result.ok and result.text.strip() == "workspace peek"
    out = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(ws.root), "tools", "--json"],
                         capture_output=True, text=True, check=True)
    notes = json.loads(out.stdout)["notes"]
    assert any("peek" in n and "overrides" in n for n in notes)


@pytest.mark.parametrize("path", ["constraints/evil", "CONSTRAINTS/evil", "Constraints/x/evil"])
def test_agents_cannot_write_constraint_scripts(ws, path: str) -> None:  # type: ignore[no-untyped-def]
    """Not even in another case: on macOS and Windows CONSTRAINTS/ is the same folder."""
    before = _count(ws.root)
    result = ws.call("create", {"path": path, "file_text": "#!/bin/sh\nrm -rf /\n"})
    assert not result.ok and "constraint scripts are code" in result.text
    assert not (ws.root / path).exists() and _count(ws.root) == before


def test_peek_on_the_sample_journal_prints_metadata_and_no_entry(tmp_path: Path) -> None:
    copy = tmp_path / "sample"
    shutil.copytree(SAMPLE, copy)
    gitspace.init(copy).close()
    out = subprocess.run(
        [sys.executable, "-m", "gitspace", "-C", str(copy), "call", "peek", "--args",
         '{"path": "journal/worklog.jsonl"}'], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    entries = [json.loads(line) for line in (copy / "journal/worklog.jsonl").read_text().splitlines()]
    assert f"{len(entries):,}" in out.stdout
    texts = {e["text"] for e in entries}
    assert not any(text in out.stdout for text in texts), "peek printed an entry's text"
    assert _git(copy, "status", "--porcelain") == ""


def test_discovery_is_remembered_until_a_script_changes(ws: gitspace.Workspace) -> None:
    """ws.call does not re-read every script header per call, yet sees every change at once."""
    from gitspace.tools.scripts import RACY_NS, catalog

    folder = ws.root / "constraints"
    assert catalog(ws) is not catalog(ws)  # just written: too fresh to trust a stat
    time.sleep(RACY_NS / 1e9 + 0.1)
    settled = catalog(ws)
    assert catalog(ws) is settled and ws.call("peek", {"path": "a.txt"}).ok
    assert catalog(ws) is settled  # the call looked the script up in what was remembered
    # Same size, same name: only the content changed. Seen on the next call, not remembered.
    (folder / "peek").write_text((folder / "peek").read_text().replace("workspace", "WORKSPACE"))
    assert ws.call("peek", {"path": "a.txt"}).text.strip() == "WORKSPACE peek"
    assert catalog(ws) is not settled
    write_script(folder, "later", False, 'echo "new"\n')
    assert ws.call("later", {"path": "a.txt"}).text.strip() == "new"
    (folder / "later").unlink()
    assert not ws.call("later", {"path": "a.txt"}).ok
    time.sleep(RACY_NS / 1e9 + 0.1)
    again = catalog(ws)
    assert catalog(ws) is again and "later" not in again.scripts
    (folder / "peek").chmod(0o644)  # even a chmod (it decides whether a script can run) counts
    assert catalog(ws) is not again


def test_gitspace_own_read_only_scripts_are_not_watched_a_workspace_one_is(
        ws, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The watch around a read-only script is two ``git status`` of the whole work tree, whose
    cost grows with its files: gitspace's own scripts (its code, held to writing nothing by
    tests/tools/test_builtin_constraints.py) run without it; a workspace's script is watched,
    and so is a built-in's copy inside the workspace, which the workspace's ops could rewrite."""
    from gitspace.storage.gitrepo import GitRepo
    from gitspace.tools import scripts

    looks: list[str] = []
    status = GitRepo.status_paths
    monkeypatch.setattr(GitRepo, "status_paths", lambda repo: looks.append("status") or status(repo))
    mine = ws.call("stat", {"path": "a.txt"})
    assert mine.ok and "a.txt" in mine.text and looks == []
    theirs = ws.call("peek", {"path": "a.txt"})  # the workspace's own script of that name
    assert theirs.ok and theirs.text.strip() == "workspace peek" and looks == ["status"] * 2
    builtin = scripts.catalog(ws).scripts["stat"]
    assert builtin.origin == "builtin" and scripts._ours(ws, builtin)
    inside = ws.root / "vendor" / "stat"
    inside.parent.mkdir()
    shutil.copy(builtin.path, inside)
    assert not scripts._ours(ws, dataclasses.replace(builtin, path=inside))
