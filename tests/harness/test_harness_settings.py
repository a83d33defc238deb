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
    # A committed file names no path of this machine: the hooks run in every clone.
    assert post[1]["hooks"][0] == {"type": "command", "command": "gitspace hook claude-code",
                                   "timeout": 30}
    assert data["hooks"]["Notification"] == USERS_OWN["hooks"]["Notification"]
    assert set(data["hooks"]) == {"SessionStart", "PreToolUse", "PostToolUse",
                                  "PostToolUseFailure", "UserPromptSubmit", "Stop", "SessionEnd",
                                  "Notification"}
    assert ops(root)[-1].source == "external"
    assert_clean(root)

    again = install.install("claude-code", "project", root, tmp_path, PROGRAM)
    assert not again.changed and again.op is None and read(path) == data
    status = settings.status(path, adapters.specs()["claude-code"])
    assert status.complete and status.command == "gitspace hook claude-code"

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


def test_settings_that_stay_on_this_machine_name_this_installation(root: Path,
                                                                  tmp_path: Path) -> None:
    # (A harness started from a desktop launcher may not have a pipx or venv folder on PATH.)
    path = root / ".claude" / "settings.local.json"
    install.install("claude-code", "local", root, tmp_path, PROGRAM)
    assert {h["command"] for g in read(path)["hooks"]["Stop"] for h in g["hooks"]} == {
        f"{PROGRAM} hook claude-code"}
    # A moved installation updates the command in place instead of adding a second entry.
    install.install("claude-code", "local", root, tmp_path, "/new/bin/gitspace")
    assert [h["command"] for g in read(path)["hooks"]["PostToolUse"] for h in g["hooks"]] == [
        "/new/bin/gitspace hook claude-code"]
    assert_clean(root)


@pytest.mark.parametrize(("name", "unit"), [("claude-code", 30), ("codex", 30),
                                            ("gemini-cli", 30_000)])
def test_each_harness_gets_its_timeout_in_the_unit_it_reads(root: Path, tmp_path: Path,
                                                            name: str, unit: int) -> None:
    wired = install.install(name, "project", root, tmp_path, PROGRAM)
    spec = adapters.specs()[name]
    entries = [h for groups in read(wired.path)["hooks"].values() for g in groups
               for h in g["hooks"]]
    assert len(entries) == len(spec.events)
    assert {h["timeout"] for g in read(wired.path)["hooks"].get("Interrupt", []) for h in g["hooks"]
            } <= {3}, "Codex cuts an Interrupt hook to 3 s (and says so on every run if asked more)"
    assert {h["timeout"] for e, groups in read(wired.path)["hooks"].items() if e != "Interrupt"
            for g in groups for h in g["hooks"]} == {unit}
    assert settings.status(wired.path, spec).complete


def test_a_gemini_timeout_read_as_milliseconds_is_named_and_fixed(root: Path,
                                                                 tmp_path: Path) -> None:
    # What gitspace wrote before it knew: Gemini CLI kills such a hook after 30 ms.
    path = root / ".gemini" / "settings.json"
    spec = adapters.specs()["gemini-cli"]
    hooks = {event: [{**({"matcher": m} if m else {}), "hooks": [
        {"type": "command", "command": "gitspace hook gemini-cli", "timeout": 30}]}]
        for event, m in spec.events}
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": hooks}))
    found = settings.status(path, spec)
    assert not found.complete and set(found.short) == {e for e, _ in spec.events}
    assert all(found.events.values()), "the hooks are there, and killed"
    install.install("gemini-cli", "project", root, tmp_path, PROGRAM)
    assert settings.status(path, spec).complete
    assert {h["timeout"] for g in read(path)["hooks"].values() for x in g
            for h in x["hooks"]} == {30_000}


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
                                              {"command": "gitspace hook cursor"}]
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


def test_both_installs_at_once_are_named(root: Path) -> None:
    # A person who follows both README sections: the harness would run both, every event twice.
    gs(root, "hooks", "install", "codex")
    out = gs(root, "hooks", "install", "codex", "--scope", "user")
    assert f"also in {root / '.codex' / 'hooks.json'}" in out.stdout
    assert "every event would arrive twice" in out.stdout
    rows = {(r["harness"], r["scope"]): r
            for r in json.loads(gs(root, "hooks", "status", "--json").stdout)}
    assert "arrive twice" in rows[("codex", "project")]["note"]
    assert "arrive twice" in rows[("codex", "user")]["note"]
    assert rows[("gemini-cli", "project")]["note"] is None
    gs(root, "hooks", "uninstall", "codex", "--scope", "user")
    rows = {(r["harness"], r["scope"]): r
            for r in json.loads(gs(root, "hooks", "status", "--json").stdout)}
    assert "twice" not in (rows[("codex", "project")]["note"] or "")
