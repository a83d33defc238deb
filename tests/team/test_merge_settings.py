"""``gitspace merge`` of an agent's branch never brings gitspace's hook settings into the person's
branch (the attached worktree had them committed, with an absolute path to gitspace), keeps the
agent's other settings changes, and ``--squash`` makes one commit with one parent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import git
from user_repo import gs, make_user_repo

import gitspace
from gitspace.harness import install
from gitspace.team import attach, merge

PROGRAM = f"{sys.executable} -m gitspace"


@pytest.fixture
def agent(tmp_path: Path) -> tuple[Path, Path]:
    user = make_user_repo(tmp_path / "user")
    place = attach.attach(user, "claude-code").path
    install.install("claude-code", None, place, tmp_path / "home", PROGRAM)
    with gitspace.open(place, agent="claude-code") as ws:
        assert ws.call("create", {"path": "feature.txt", "file_text": "done\n"}).ok
        assert ws.call("create", {"path": "more.txt", "file_text": "more\n"}).ok
    return user, place


def test_merge_leaves_gitspace_hooks_behind(agent: tuple[Path, Path]) -> None:
    user, place = agent
    settings = json.loads((place / ".claude" / "settings.json").read_text())
    assert "gitspace" in json.dumps(settings["hooks"])
    done = merge.merge(user, "claude-code")
    files = git(user, "ls-tree", "-r", "--name-only", "main").split()
    assert "feature.txt" in files and ".claude/settings.json" not in files
    assert ".claude/settings.json" not in done.files
    assert len(git(user, "log", "-1", "--format=%P", "main").split()) == 2


def test_the_agents_own_settings_come_along_without_the_hooks(agent: tuple[Path, Path]) -> None:
    user, place = agent
    path = place / ".claude" / "settings.json"
    data = json.loads(path.read_text())
    data["permissions"] = {"allow": ["Bash(make:*)"]}
    data["hooks"]["Notification"] = [{"hooks": [{"type": "command", "command": "notify-send"}]}]
    path.write_text(json.dumps(data))
    with gitspace.open(place, agent="claude-code") as ws:
        assert ws.snapshot().ok
    merge.merge(user, "claude-code")
    merged = json.loads(git(user, "show", "main:.claude/settings.json"))
    assert merged["permissions"] == {"allow": ["Bash(make:*)"]}
    assert merged["hooks"] == {"Notification": [
        {"hooks": [{"type": "command", "command": "notify-send"}]}]}


def test_squash_is_one_commit_with_one_parent(agent: tuple[Path, Path]) -> None:
    user, _ = agent
    before = git(user, "rev-parse", "main").strip()
    out = gs(user, "merge", "claude-code", "--squash")
    assert out.returncode == 0, out.stderr
    assert "one squashed commit" in out.stdout
    assert git(user, "log", "-1", "--format=%P", "main").split() == [before]
    message = git(user, "log", "-1", "--format=%B", "main")
    assert message.startswith("Squashed work of agent claude-code")
    assert "create feature.txt" in message and "create more.txt" in message
    assert "Gitspace-Op" not in message  # not an op: the ops stay on agent/claude-code
    files = git(user, "ls-tree", "-r", "--name-only", "main").split()
    assert {"feature.txt", "more.txt"} <= set(files) and ".claude/settings.json" not in files
