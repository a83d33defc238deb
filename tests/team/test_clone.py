"""A workspace pushed to a fresh bare remote clones cleanly, and gitspace opens the clone with no
manual step (the issue: 'remote HEAD refers to nonexistent ref' and a clone with nothing
checked out)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import assert_clean, call_ok, git, git_env

import gitspace
from gitspace.core import timeline
from gitspace.team import remote as sync


def _fresh_bare(tmp_path: Path, name: str = "remote.git") -> Path:
    bare = tmp_path / name
    # Plain 'git init --bare': HEAD names the default branch (master here), which nobody pushes.
    git(tmp_path, "init", "-q", "--bare", str(bare))
    assert (bare / "HEAD").read_text().strip() == "ref: refs/heads/master"
    return bare


def _clone(url: str, target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "clone", url, str(target)], cwd=target.parent, env=git_env(),
                          capture_output=True, text=True)


@pytest.mark.parametrize("how", ["path", "file-url", "relative"])
def test_push_to_a_fresh_bare_remote_clones_cleanly(tmp_path: Path, how: str) -> None:
    bare = _fresh_bare(tmp_path)
    url = {"path": str(bare), "file-url": f"file://{bare}", "relative": "../remote.git"}[how]
    with gitspace.init(tmp_path / "a", agent="alice") as ws:
        call_ok(ws, "create", {"path": "notes/a.md", "file_text": "a\n"})
        call_ok(ws, "checkpoint", {"name": "first"})
        git(ws.root, "remote", "add", "origin", url)
        report = sync.push(ws)
        assert any("HEAD now names main" in n for n in report.notes), report.notes
        tip = ws.tip()
    assert (bare / "HEAD").read_text().strip() == "ref: refs/heads/main"
    cloned = _clone(str(bare), tmp_path / "b")
    assert cloned.returncode == 0, cloned.stderr
    said = [ln for ln in cloned.stderr.splitlines() if not ln.startswith("Cloning into")]
    assert said in ([], ["done."]), cloned.stderr  # no "remote HEAD refers to nonexistent ref"
    b = tmp_path / "b"
    assert (b / "notes" / "a.md").read_text() == "a\n"
    with gitspace.open(b, agent="bob") as ws:
        assert ws.owned and ws.tip() == tip
        call_ok(ws, "create", {"path": "notes/b.md", "file_text": "b\n"})
        assert [e.op.tool for e in timeline.timeline(ws, None) if e.op] == [
            "create", "create", "init"]
    assert_clean(b)
    with gitspace.open(tmp_path / "a", agent="alice") as ws:
        second = sync.push(ws)  # HEAD resolves now: no note, nothing changed
        assert not any("HEAD" in n for n in second.notes)


def test_a_remote_head_that_resolves_is_left_alone(tmp_path: Path) -> None:
    bare = _fresh_bare(tmp_path)
    seed = tmp_path / "seed"
    git(tmp_path, "init", "-q", "-b", "master", str(seed))
    (seed / "x").write_text("x")
    git(seed, "add", "x")
    git(seed, "commit", "-q", "-m", "theirs")
    git(seed, "push", "-q", str(bare), "master")
    with gitspace.init(tmp_path / "a", agent="alice") as ws:
        git(ws.root, "remote", "add", "origin", str(bare))
        report = sync.push(ws)
    assert (bare / "HEAD").read_text().strip() == "ref: refs/heads/master"
    assert not any("HEAD" in n for n in report.notes)


def test_a_clone_of_a_workspace_itself_opens_and_records(tmp_path: Path) -> None:
    with gitspace.init(tmp_path / "a", agent="alice") as ws:
        call_ok(ws, "create", {"path": "a.txt", "file_text": "a\n"})
    assert _clone(str(tmp_path / "a"), tmp_path / "b").returncode == 0
    with gitspace.open(tmp_path / "b", agent="bob") as ws:
        assert ws.owned
        call_ok(ws, "str_replace", {"path": "a.txt", "old_str": "a", "new_str": "b"})
    assert_clean(tmp_path / "b")
