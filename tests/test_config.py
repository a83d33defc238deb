"""The environment children get: locale and PATH, never secrets; the ssh agent only for git."""

from __future__ import annotations

import pytest

from gitspace import config


def test_children_never_see_secrets_and_only_git_sees_the_ssh_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
    monkeypatch.setenv("GIT_DIR", "/elsewhere")
    for_git = config.child_environment()
    for_scripts = config.child_environment(ssh_agent=False)
    for env in (for_git, for_scripts):
        assert "ANTHROPIC_API_KEY" not in env and "GITHUB_TOKEN" not in env and "GIT_DIR" not in env
        assert "sk-ant-secret" not in env.values()
    assert for_git["SSH_AUTH_SOCK"] == "/tmp/agent.sock"
    assert "SSH_AUTH_SOCK" not in for_scripts


def test_only_variables_that_may_move_the_repository_count(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in config.inherited_git_variables():
        monkeypatch.delenv(name)
    for name, value in [("GIT_CONFIG_NOSYSTEM", "1"), ("GIT_TRACE2_EVENT", "/dev/null"),
                        ("GIT_AUTHOR_NAME", "someone"), ("GIT_SSL_CAINFO", "/etc/ca.pem"),
                        ("GIT_CONFIG_GLOBAL", "/dev/null")]:
        monkeypatch.setenv(name, value)
    assert config.git_layout_variables() == []
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                 "GIT_CEILING_DIRECTORIES", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_KEY_0"):
        monkeypatch.setenv(name, "/elsewhere")
        assert config.git_layout_variables() == [name]
        monkeypatch.delenv(name)
