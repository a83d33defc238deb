"""git's hooks ask the checkout's resident recorder first (provenance/githooks.py, the resident's
``POST /git/<hook>``): a commit made while it runs gets its note from it, with no Python started
for the hook, and one made when it is not there (stopped, or answering no) gets it from the
hook's own process, as before. Either way the note is there when git returns."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hookcalls import payload
from user_repo import fsck, make_user_repo

from gitspace.harness.resident import client, home
from gitspace.provenance import githooks

ON = {**os.environ, "GITSPACE_RESIDENT": "on"}


def gs(root: Path, *args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), *args], env=ON,
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"gitspace {args}:\n{proc.stdout}{proc.stderr}"


def git(root: Path, *args: str, input: str | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=root, env=ON, capture_output=True, text=True,
                          input=input)
    assert proc.returncode == 0, f"git {args}: {proc.stderr}"
    return proc.stdout


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """A person's checkout with Claude Code's hooks (and git's) installed, its resident
    listening, and the hooks' own Python marking each time it runs."""
    root = make_user_repo(tmp_path / "repo")
    gs(root, "hooks", "install", "claude-code")
    mark = tmp_path / "the-hook-started-python"
    for name in githooks.SERVED:
        hook = root / ".git" / "hooks" / name
        text = hook.read_text()
        assert text.count('exec "$GITSPACE_PY"') == 1
        hook.write_text(text.replace('exec "$GITSPACE_PY"', f'touch {mark}; exec "$GITSPACE_PY"'))
    assert client.start_resident(root, root / ".git")
    assert home.alive(root / ".git") is not None, "the resident did not start"
    try:
        yield root
    finally:
        gs(root, "hooks", "uninstall", "claude-code")


def python_ran(root: Path) -> bool:
    mark = root.parent / "the-hook-started-python"
    ran = mark.exists()
    mark.unlink(missing_ok=True)
    return ran


def agent_writes(root: Path, rel: str, text: str, use_id: str) -> None:
    """A Write as Claude Code's command hooks hand it to the resident."""
    tool_input = {"file_path": str(root / rel), "content": text}
    for event in ("PreToolUse", "PostToolUse"):
        if event == "PostToolUse":
            (root / rel).write_text(text)
        sent = json.dumps(payload(root, event, "Write", tool_input, use_id)).encode()
        assert client.forward(root, "claude-code", [], sent) is not None


def noted_keys(root: Path, rev: str = "HEAD") -> list[str]:
    text = git(root, "notes", "--ref=ai", "show", rev)
    return [row.split()[0] for row in text.split("\n---\n")[0].splitlines()
            if row.startswith("  ")]


def test_a_commit_while_the_resident_runs_is_noted_by_it(root: Path) -> None:
    agent_writes(root, "agent.py", "print('hi')\n", "toolu_r1")
    git(root, "add", "agent.py")
    git(root, "commit", "-q", "-m", "the person commits")
    assert noted_keys(root) and noted_keys(root)[0].startswith("s_")
    assert not python_ran(root), "the hook started Python though the resident was there"
    # An amend is post-rewrite's, with what git writes to its stdin: the resident's too.
    (root / "mine.txt").write_text("by hand\n")
    git(root, "add", "mine.txt")
    git(root, "commit", "-q", "--amend", "--no-edit")
    keys = noted_keys(root)
    assert any(k.startswith("s_") for k in keys) and any(k.startswith("h_") for k in keys)
    assert not python_ran(root)
    fsck(root)


def test_without_an_answer_from_the_resident_the_hook_writes_the_note_itself(root: Path) -> None:
    gitdir = root / ".git"
    secret = gitdir / home.SECRET
    kept = secret.read_bytes()
    agent_writes(root, "a.py", "a = 1\n", "toolu_r2")
    secret.write_text("not-the-secret\n")  # (the resident refuses: 401)
    try:
        git(root, "add", "a.py")
        git(root, "commit", "-q", "-m", "refused")
        assert noted_keys(root) and python_ran(root)
    finally:
        secret.write_bytes(kept)
    agent_writes(root, "b.py", "b = 1\n", "toolu_r3")
    pid = home.alive(gitdir)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while home.alive(gitdir) is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    git(root, "add", "b.py")
    git(root, "commit", "-q", "-m", "no resident")
    assert noted_keys(root) and python_ran(root)
    with_off = {**ON, "GITSPACE_RESIDENT": "off"}  # (off: every hook in its own process)
    assert client.start_resident(root, gitdir)
    (root / "c.txt").write_text("c\n")
    subprocess.run(["git", "add", "c.txt"], cwd=root, env=with_off, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "off"], cwd=root, env=with_off, check=True)
    assert python_ran(root)
    fsck(root)
