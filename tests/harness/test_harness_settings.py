"""``gitspace hooks install|uninstall|status``: merged into the harness's own settings, never
clobbering a user's hooks, idempotent, and refusing files it cannot read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_clean, ops
from hookcalls import users_repo
from test_harness_claude_code import gs

import gitspace
from gitspace.errors import BadArguments, GitspaceError
from gitspace.harness import adapters, install, settings

PROGRAM = "/opt/venv/bin/gitspace"
USERS_OWN = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier -w"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    },
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    gitspace.init(tmp_path / "ws").close()
    return tmp_path / "ws"


def read(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())


def test_install_merges_and_is_idempotent(root: Path, tmp_path: Path) -> None:
    path = root / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(USERS_OWN))
    gitspace.open(root).snapshot()
    wired = install.install("claude-code", "project", root, tmp_path, PROGRAM)
    assert wired.changed and wired.op is not None
    data = read(path)
    assert data["model"] == "opus" and data["permissions"] == USERS_OWN["permissions"]
    post = data["hooks"]["PostToolUse"]
    assert post[0] == USERS_OWN["hooks"]["PostToolUse"][0], "the user's hook stays first, as it was"
    assert post[1]["matcher"] == "Write|Edit|MultiEdit|NotebookEdit|Bash"
    assert post[1]["hooks"][0]["command"] == f"{PROGRAM} hook claude-code"
    assert data["hooks"]["Notification"] == USERS_OWN["hooks"]["Notification"]
    assert set(data["hooks"]) == {"SessionStart", "PreToolUse", "PostToolUse",
                                  "PostToolUseFailure", "UserPromptSubmit", "Stop", "SessionEnd",
                                  "Notification"}
    assert ops(root)[-1].source == "external"
    assert_clean(root)

    again = install.install("claude-code", "project", root, tmp_path, PROGRAM)
    assert not again.changed and again.op is None and read(path) == data
    status = settings.status(path, adapters.specs()["claude-code"])
    assert status.complete and status.command == f"{PROGRAM} hook claude-code"

    # A moved installation updates the command in place instead of adding a second entry.
    install.install("claude-code", "project", root, tmp_path, "/new/bin/gitspace")
    assert [h["command"] for g in read(path)["hooks"]["PostToolUse"] for h in g["hooks"]] == [
        "prettier -w", "/new/bin/gitspace hook claude-code"]

    removed = install.uninstall("claude-code", "project", root, tmp_path)
    assert removed.changed
    assert read(path) == USERS_OWN, "uninstall leaves exactly what the user had"
    assert_clean(root)


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"hooks": []}',
                                     '{"hooks": {"Stop": {"command": "x"}}}',
                                     '{"hooks": {"Stop": ["not a group"]}}'])
def test_a_settings_file_it_cannot_read_is_refused_untouched(root: Path, tmp_path: Path,
                                                             content: str) -> None:
    path = root / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(content)
    with pytest.raises(GitspaceError, match="Nothing was changed"):
        install.install("claude-code", "project", root, tmp_path, PROGRAM)
    assert path.read_text() == content


def test_user_scope_is_quiet_outside_a_workspace(tmp_path: Path) -> None:
    home = tmp_path / "home"
    wired = install.install("claude-code", "user", tmp_path, home, PROGRAM)
    assert wired.path == home / ".claude" / "settings.json"
    commands = {h["command"] for g in read(wired.path)["hooks"]["Stop"] for h in g["hooks"]}
    assert commands == {f"{PROGRAM} hook claude-code --quiet-outside"}


def test_project_hooks_are_refused_in_your_own_checkout(tmp_path: Path) -> None:
    user = users_repo(tmp_path / "repo")
    with pytest.raises(BadArguments, match="committed with your project") as refused:
        install.install("claude-code", "project", user, tmp_path, PROGRAM)
    assert "Leave out --scope" in str(refused.value.hint)
    assert not (user / ".claude").exists() and not (user / ".git" / "gitspace").exists()


def test_cursor_hooks_use_its_flat_layout(root: Path, tmp_path: Path) -> None:
    path = root / ".cursor" / "hooks.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"version": 1, "hooks": {"afterFileEdit": [{"command": "fmt"}]}}))
    install.install("cursor", "project", root, tmp_path, PROGRAM)
    data = read(path)
    assert data["version"] == 1
    assert data["hooks"]["afterFileEdit"] == [{"command": "fmt"},
                                              {"command": f"{PROGRAM} hook cursor"}]
    assert set(data["hooks"]) == {"afterFileEdit", "beforeShellExecution", "afterShellExecution",
                                  "beforeSubmitPrompt", "stop"}
    install.uninstall("cursor", "project", root, tmp_path)
    assert read(path) == {"version": 1, "hooks": {"afterFileEdit": [{"command": "fmt"}]}}


def test_is_ours_recognises_only_gitspace_hook_commands() -> None:
    assert settings.is_ours("/x/.venv/bin/gitspace hook claude-code --quiet-outside", "claude-code")
    assert settings.is_ours("'/a b/python' -m gitspace hook codex", "codex")
    assert not settings.is_ours("/x/gitspace hook codex", "claude-code")
    assert not settings.is_ours("echo gitspace hook claude-code", "cursor")
    assert not settings.is_ours("my-hook claude-code", "claude-code")
    assert not settings.is_ours("unbalanced 'quote", "claude-code")
    assert not settings.is_ours(None, "claude-code")


def test_the_cli_commands(root: Path) -> None:
    out = gs(root, "hooks", "install", "claude-code")
    assert "Installed gitspace's Claude Code hooks" in out.stdout
    rows = {(r["harness"], r["scope"]): r
            for r in json.loads(gs(root, "hooks", "status", "--json").stdout)}
    assert rows[("claude-code", "project")]["installed"] is True
    assert rows[("codex", "project")]["installed"] is False
    assert "installed" in gs(root, "hooks", "status").stdout
    out = gs(root, "hooks", "install", "nope", check=False)
    assert out.returncode == 1 and "no hooks for 'nope'" in out.stderr
    out = gs(root, "hooks", "install", "claude-code", "--scope", "x", check=False)
    assert out.returncode == 1 and "no 'x' settings scope" in out.stderr
    assert "Removed" in gs(root, "hooks", "uninstall", "claude-code").stdout
    assert_clean(root)
