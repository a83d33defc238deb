"""No false greens from what a clone lacks: a shallow history, checkpoint tags left behind by a
plain ``git push``, a range with no op to re-run. Real clones of a real workspace pushed to a
bare remote on disk; ``gitspace`` run as CI runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import call_ok, git, gitspace_cli, head

import gitspace

FIX = "git fetch --unshallow"


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """A bare remote holding a workspace: main with five ops, a checkpoint and a restore, and
    branch agent forked at main~3 with two ops of its own; pushed with plain git (no tags)."""
    root = tmp_path / "ws"
    with gitspace.init(root, agent="ci-bot") as ws:
        call_ok(ws, "create", {"path": "a.md", "file_text": "one\n"})
        call_ok(ws, "checkpoint", {"name": "start"})
        call_ok(ws, "str_replace", {"path": "a.md", "old_str": "one", "new_str": "two"})
        call_ok(ws, "branch", {"name": "agent"})
        call_ok(ws, "create", {"path": "agent.md", "file_text": "agent\n"})
        call_ok(ws, "create", {"path": "agent2.md", "file_text": "more\n"})
        call_ok(ws, "switch", {"name": "main"})
        call_ok(ws, "restore", {"name": "start"})
        call_ok(ws, "create", {"path": "b.md", "file_text": "b\n"})
        call_ok(ws, "create", {"path": "c.md", "file_text": "c\n"})
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(bare))
    git(root, "push", "-q", str(bare), "main", "agent")  # plain git: no checkpoint tags
    return bare


def clone(remote: Path, to: Path, *args: str) -> Path:
    git(to.parent, "clone", "-q", *args, f"file://{remote}", str(to))
    return to


def test_replay_and_verify_refuse_a_shallow_clone_and_say_how_to_fetch_the_rest(
        remote: Path, tmp_path: Path) -> None:
    shallow = clone(remote, tmp_path / "shallow", "--depth", "1")
    for command in (["replay"], ["replay", "--json"], ["verify"], ["verify", "--json"]):
        out = gitspace_cli(shallow, *command)
        assert out.returncode == 1, (command, out.stdout, out.stderr)
        said = " ".join(out.stderr.split())
        assert "This clone is shallow" in said and FIX in said and "fetch-depth: 0" in said
        assert out.stdout == ""  # no report that a script could take for a result
    assert git(shallow, "rev-parse", "--is-shallow-repository").strip() == "true"


def test_a_shallow_clone_may_check_a_range_it_holds_but_not_one_reaching_past_it(
        remote: Path, tmp_path: Path) -> None:
    shallow = clone(remote, tmp_path / "deep3", "--depth", "3")
    within = gitspace_cli(shallow, "replay", "--from", "HEAD~2", "--json")
    assert within.returncode == 0, within.stderr
    assert json.loads(within.stdout)["reexecuted"] == 2
    assert gitspace_cli(shallow, "verify", "--from", "HEAD~2").returncode == 0
    # agent forked 4 commits back: 'main..agent' walks down to where the history was cut.
    git(shallow, "fetch", "-q", "--depth", "2", "origin", "agent:agent")
    for command in ("replay", "verify"):
        out = gitspace_cli(shallow, command, "agent", "--from", "main")
        assert out.returncode == 1 and FIX in " ".join(out.stderr.split()), out.stderr
    git(shallow, "fetch", "-q", "--unshallow", "origin")
    fixed = gitspace_cli(shallow, "replay", "agent", "--from", "main", "--json")
    assert fixed.returncode == 0 and json.loads(fixed.stdout)["reexecuted"] == 2, fixed.stderr


def test_a_checkpoint_a_restore_needs_is_fetched_from_the_remote_without_a_tag_here(
        remote: Path, tmp_path: Path) -> None:
    source = tmp_path / "ws"
    git(source, "push", "-q", str(remote), "refs/tags/gitspace/start")
    full = clone(remote, tmp_path / "full", "--no-tags")
    assert git(full, "tag", "--list") == ""
    out = gitspace_cli(full, "replay", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["result"] == "match" and report["fetched"] == ["start"]
    assert git(full, "tag", "--list") == ""  # replay only reads: the tag went to its scratch
    text = gitspace_cli(full, "replay")
    assert "fetched checkpoint(s) start from a remote" in text.stdout


def test_a_checkpoint_no_remote_has_stops_the_replay_with_the_fix(
        remote: Path, tmp_path: Path) -> None:
    full = clone(remote, tmp_path / "full")
    out = gitspace_cli(full, "replay", "--json")
    assert out.returncode == 1 and out.stdout == "", out.stdout
    said = " ".join(out.stderr.split())
    assert "restores checkpoint(s) 'start', which are not in this clone nor on origin" in said
    assert "gitspace push" in said and "refs/tags/gitspace/*:refs/tags/gitspace/*" in said
    # The fix works: push the tags (what 'gitspace push' sends), and the replay fetches them.
    git(tmp_path / "ws", "push", "-q", str(remote), "refs/tags/gitspace/*:refs/tags/gitspace/*")
    assert gitspace_cli(full, "replay").returncode == 0


def test_a_replay_that_re_ran_no_op_fails_unless_allowed(remote: Path, tmp_path: Path) -> None:
    full = clone(remote, tmp_path / "full")
    tip = head(full)
    (full / "README.md").write_text("a person's note\n")
    git(full, "add", "README.md")
    git(full, "commit", "-qm", "a plain commit")
    out = gitspace_cli(full, "replay", "--from", tip)
    assert out.returncode == 1, out.stdout
    assert "nothing re-executed" in out.stdout and "--allow-empty" in out.stdout
    data = json.loads(gitspace_cli(full, "replay", "--from", tip, "--json").stdout)
    assert data["result"] == "empty" and not data["ok"] and data["checked"] == 1
    assert "re-executed no op" in data["empty"]
    assert gitspace_cli(full, "replay", "--from", tip, "--allow-empty").returncode == 0
    # A repository with no op at all has nothing to re-run: not a failure.
    plain = tmp_path / "plain"
    git(tmp_path, "init", "-q", str(plain))
    (plain / "x.txt").write_text("x\n")
    git(plain, "add", "x.txt")
    git(plain, "commit", "-qm", "one")
    (plain / "x.txt").write_text("y\n")
    git(plain, "commit", "-qam", "two")
    assert gitspace_cli(plain, "replay").returncode == 0


def test_a_merge_whose_other_parent_was_cut_is_refused(remote: Path, tmp_path: Path) -> None:
    source = tmp_path / "ws"
    git(source, "switch", "-q", "agent")
    git(source, "merge", "-q", "--no-edit", "main")
    git(source, "push", "-q", str(remote), "agent")
    git(source, "switch", "-q", "main")
    shallow = clone(remote, tmp_path / "cut", "--depth", "2", "--branch", "agent")
    merge = head(shallow)
    assert len(git(shallow, "log", "-1", "--format=%P", merge).split()) == 2
    out = gitspace_cli(shallow, "replay", "--from", "HEAD~1", "--allow-empty")
    assert out.returncode == 1 and FIX in " ".join(out.stderr.split()), out.stdout + out.stderr
