"""provenance/githooks.py: gitspace's git hooks go in beside the person's own, wherever git runs
hooks (``.git/hooks``, ``core.hooksPath``, husky's, the pre-commit framework's), run them first
exactly as git would, never fail or slow the person's git, keep working when gitspace is gone,
and ``gitspace hooks uninstall`` leaves the folder as it was, byte for byte.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from authored import agent_writes, by_line, gs, note, person
from conftest import REPO, git_env

from gitspace.provenance import githooks

HUSKY = REPO / ".cache" / "husky" / "node_modules" / "husky" / "bin.js"
SPY = """#!/bin/sh
# the person's own {name} hook
echo "$(basename "$0") $# $*" >> "$(git rev-parse --git-dir)/ran-{name}"
{more}
"""


def folder_state(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of a hooks folder: its bytes and mode (a link: where it points)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            out[rel] = (os.readlink(path).encode(), -1)
        elif path.is_file():
            out[rel] = (path.read_bytes(), path.stat().st_mode)
    return out


def person_repo(parent: Path) -> Path:
    root = parent / "repo"
    root.mkdir()
    person(root, "init", "-q", "-b", "main")
    person(root, "config", "user.name", "Zoë van Dijk")
    person(root, "config", "user.email", "zoe@example.invalid")
    (root / "a.txt").write_text("one\n")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "first")
    return root


def spy(folder: Path, name: str, more: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(SPY.format(name=name, more=more))
    (folder / name).chmod(0o755)


def test_the_persons_hooks_run_first_as_git_runs_them_and_come_back_byte_for_byte(
        tmp_path: Path) -> None:
    root = person_repo(tmp_path)
    hooks = root / ".git" / "hooks"
    spy(hooks, "post-commit")
    spy(hooks, "pre-push", 'while read -r line; do echo "$line"; done >> "$(git rev-parse '
                          '--git-dir)/pushed-refs"\nexit 3')
    before = folder_state(hooks)
    gs(root, "hooks", "install", "claude-code")
    assert githooks.installed(gs_repo(root))
    assert (hooks / "post-commit.gitspace-chained").read_bytes() == before["post-commit"][0]
    agent_writes(root, "b.txt", "by the agent\n", "toolu_1")
    person(root, "add", "b.txt")
    person(root, "commit", "-q", "-m", "second")
    assert (root / ".git" / "ran-post-commit").read_text() == "post-commit 0 \n", \
        "the person's hook ran once, as itself, with git's arguments"
    assert by_line(root, "HEAD", "b.txt") == {"by the agent": "agent:Write"}
    bare = tmp_path / "remote.git"
    person(tmp_path, "init", "-q", "--bare", str(bare))
    person(root, "remote", "add", "origin", str(bare))
    pushed = person(root, "push", "origin", "main", check=False)
    assert pushed.returncode != 0, "a pre-push hook of the person's that refuses still refuses"
    assert "refs/heads/main" in (root / ".git" / "pushed-refs").read_text()
    assert person(bare, "for-each-ref", check=False).stdout == ""
    gs(root, "hooks", "uninstall", "claude-code")
    assert folder_state(hooks) == before


def test_hooks_go_where_core_hookspath_points_and_nothing_is_left_there(tmp_path: Path) -> None:
    root = person_repo(tmp_path)
    person(root, "config", "core.hooksPath", "tools/hooks")
    spy(root / "tools" / "hooks", "post-merge")
    before = folder_state(root / "tools" / "hooks")
    gs(root, "hooks", "install", "claude-code")
    assert githooks.ours(root / "tools" / "hooks" / "post-commit")
    assert not (root / ".git" / "hooks" / "post-commit").exists()
    person(root, "switch", "-q", "-c", "side")
    (root / "c.txt").write_text("c\n")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "side")
    person(root, "switch", "-q", "main")
    person(root, "merge", "-q", "--squash", "side")
    assert (root / ".git" / "ran-post-merge").read_text() == "post-merge 1 1\n"
    gs(root, "hooks", "uninstall", "claude-code")
    assert folder_state(root / "tools" / "hooks") == before


def test_a_hooks_folder_gitspace_had_to_make_goes_again(tmp_path: Path) -> None:
    root = person_repo(tmp_path)
    person(root, "config", "core.hooksPath", str(tmp_path / "nowhere" / "hooks"))
    gs(root, "hooks", "install", "claude-code")
    assert githooks.ours(tmp_path / "nowhere" / "hooks" / "pre-push")
    gs(root, "hooks", "uninstall", "claude-code")
    assert not (tmp_path / "nowhere" / "hooks").exists()


def test_husky_hooks_still_run_as_husky_runs_them(tmp_path: Path) -> None:
    if not HUSKY.exists():
        pytest.fail(f"husky is not installed at {HUSKY}: run 'make husky' (make test does it).",
                    pytrace=False)
    root = person_repo(tmp_path)
    (root / "package.json").write_text('{"name": "x", "private": true}\n')
    done = subprocess.run(["node", str(HUSKY)], cwd=root, env=git_env(), capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    (root / ".husky" / "post-commit").write_text('echo "husky post-commit $0" > husky-ran\n')
    before = folder_state(root / ".husky" / "_")
    gs(root, "hooks", "install", "claude-code")
    assert githooks.ours(root / ".husky" / "_" / "post-commit")
    agent_writes(root, "b.txt", "agent\n", "toolu_1")
    person(root, "add", "b.txt")
    person(root, "commit", "-q", "-m", "with husky")
    assert (root / "husky-ran").read_text().startswith("husky post-commit .husky/post-commit")
    assert by_line(root, "HEAD", "b.txt") == {"agent": "agent:Write"}
    gs(root, "hooks", "uninstall", "claude-code")
    assert folder_state(root / ".husky" / "_") == before


def test_the_pre_commit_frameworks_hooks_still_run(tmp_path: Path) -> None:
    root = person_repo(tmp_path)
    (root / ".pre-commit-config.yaml").write_text(
        "default_install_hook_types: [pre-commit, post-commit]\n"
        "repos:\n- repo: local\n  hooks:\n  - id: mark\n    name: mark\n    language: system\n"
        "    entry: sh -c 'echo ran > framework-ran'\n    stages: [post-commit]\n"
        "    always_run: true\n    pass_filenames: false\n")
    framework = Path(sys.executable).parent / "pre-commit"
    env = {**git_env(), "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    done = subprocess.run([str(framework), "install"], cwd=root, env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    before = folder_state(root / ".git" / "hooks")
    gs(root, "hooks", "install", "claude-code")
    agent_writes(root, "b.txt", "agent\n", "toolu_1")
    person(root, "add", "b.txt", ".pre-commit-config.yaml")
    committed = subprocess.run(["git", "commit", "-q", "-m", "with the framework"], cwd=root,
                               env={**env, "GIT_AUTHOR_NAME": "Z", "GIT_AUTHOR_EMAIL": "z@x",
                                    "GIT_COMMITTER_NAME": "Z", "GIT_COMMITTER_EMAIL": "z@x"},
                               capture_output=True, text=True)
    assert committed.returncode == 0, committed.stdout + committed.stderr
    assert (root / "framework-ran").read_text() == "ran\n"
    assert by_line(root, "HEAD", "b.txt") == {"agent": "agent:Write"}
    gs(root, "hooks", "uninstall", "claude-code")
    assert folder_state(root / ".git" / "hooks") == before


def test_with_gitspace_gone_the_hooks_stay_quiet_and_the_persons_still_run(
        tmp_path: Path) -> None:
    root = person_repo(tmp_path)
    spy(root / ".git" / "hooks", "post-commit")
    gs(root, "hooks", "install", "claude-code")
    hook = root / ".git" / "hooks" / "post-commit"
    # As after 'pip uninstall gitspace': its Python, or gitspace in it, is gone.
    for broken in ("/nonexistent/python3", sys.executable):
        text = hook.read_text()
        line = next(x for x in text.splitlines() if x.startswith("GITSPACE_PY="))
        hook.write_text(text.replace(line, f"GITSPACE_PY={broken}").replace(
            "from gitspace.provenance", "from gitspace_gone.provenance"))
        (root / "a.txt").write_text(broken + "\n")
        done = person(root, "commit", "-q", "-a", "-m", f"with {broken}")
        assert done.stdout == "" and done.stderr == ""
    assert (root / ".git" / "ran-post-commit").read_text().count("post-commit") == 2


def test_two_hooks_of_the_persons_with_gitspaces_name_are_refused_with_nothing_changed(
        tmp_path: Path) -> None:
    root = person_repo(tmp_path)
    spy(root / ".git" / "hooks", "post-commit")
    shutil.copy(root / ".git" / "hooks" / "post-commit",
                root / ".git" / "hooks" / "post-commit.gitspace-chained")
    before = folder_state(root / ".git" / "hooks")
    out = gs(root, "hooks", "install", "claude-code", check=False)
    assert out.returncode == 1 and "post-commit.gitspace-chained is there too" in out.stderr
    assert {k: v for k, v in folder_state(root / ".git" / "hooks").items()
            if not githooks.ours(root / ".git" / "hooks" / k)} == before


def gs_repo(root: Path):  # type: ignore[no-untyped-def]
    from gitspace.storage.gitrepo import GitRepo

    return GitRepo.open(root)


def test_the_notes_of_a_commit_made_in_a_linked_worktree_are_written_too(tmp_path: Path) -> None:
    root = person_repo(tmp_path)
    gs(root, "hooks", "install", "claude-code")
    person(root, "worktree", "add", "-q", "-b", "wt", str(tmp_path / "wt"))
    (tmp_path / "wt" / "w.txt").write_text("typed\n")
    person(tmp_path / "wt", "add", ".")
    person(tmp_path / "wt", "commit", "-q", "-m", "in the worktree")
    assert note(tmp_path / "wt") is None  # a person's own line alone: no note, and no failure
