"""A person's own checkout where Claude Code is recorded in place and git's hooks write the
authorship notes: shared by the provenance tests (import by name, never from a test module).

The person runs plain git (``person``: a new process, their identity, hooks on, as a terminal
does); the agent's calls go through the real hook entry point (``hookcalls``); notes are read
back with plain ``git notes`` and parsed by the standard's reader.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import git_env
from hookcalls import call, write

from gitspace.provenance import authorship

NAME, EMAIL = "Zoë van Dijk", "zoe@example.invalid"
IDENTITY = f"{NAME} <{EMAIL}>"
PERSON = authorship.human_key(IDENTITY)


def person(root: Path, *args: str, check: bool = True, input: str | None = None
           ) -> subprocess.CompletedProcess[str]:
    """git as the person runs it in a terminal: their identity, their hooks."""
    env = {**git_env(), "GIT_AUTHOR_NAME": NAME, "GIT_AUTHOR_EMAIL": EMAIL,
           "GIT_COMMITTER_NAME": NAME, "GIT_COMMITTER_EMAIL": EMAIL, "GIT_EDITOR": "true"}
    proc = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True,
                          input=input)
    assert not check or proc.returncode == 0, f"git {args}: {proc.stdout}{proc.stderr}"
    return proc


def gs(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    proc = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), *args], env=env,
                          capture_output=True, text=True)
    assert not check or proc.returncode == 0, f"gitspace {args}:\n{proc.stdout}{proc.stderr}"
    return proc


def checkout(parent: Path, name: str = "repo") -> Path:
    """A person's repository (one commit of ``src/app.py``) with recording turned on."""
    root = parent / name
    root.mkdir()
    person(root, "init", "-q", "-b", "main")
    person(root, "config", "user.name", NAME)
    person(root, "config", "user.email", EMAIL)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    print('hi')\n")
    person(root, "add", ".")
    person(root, "commit", "-q", "-m", "first")
    gs(root, "hooks", "install", "claude-code")
    return root


def agent_writes(root: Path, rel: str, content: str, use_id: str) -> None:
    """Claude Code's Write of ``rel`` (a whole file)."""
    err = call(root, "Write", {"file_path": str(root / rel), "content": content}, use_id,
               write(root, rel, content))
    assert "gitspace:" not in err, err


def agent_edits(root: Path, rel: str, old: str, new: str, use_id: str) -> None:
    """Claude Code's Edit of ``rel``: ``old`` replaced by ``new``."""
    text = (root / rel).read_text()
    assert old in text
    err = call(root, "Edit", {"file_path": str(root / rel), "old_string": old,
                              "new_string": new}, use_id, write(root, rel,
                                                                 text.replace(old, new, 1)))
    assert "gitspace:" not in err, err


def note(root: Path, rev: str = "HEAD") -> authorship.Note | None:
    proc = person(root, "notes", "--ref=ai", "show", rev, check=False)
    return authorship.parse(proc.stdout) if proc.returncode == 0 else None


def by_line(root: Path, rev: str, path: str) -> dict[str, str | None]:
    """Each line of ``path`` at ``rev`` (its text) → who the note says wrote it: ``agent:TOOL``
    (the call's tool, from the note's trace records), ``person`` or None (not attested)."""
    found = note(root, rev)
    text = person(root, "show", f"{rev}:{path}").stdout.splitlines()
    out: dict[str, str | None] = {}
    for n, line in enumerate(text, 1):
        key = found.key_at(path, n) if found else None
        if key is None:
            out[line] = None
        elif key.startswith("h_"):
            out[line] = "person" if key == PERSON else f"person:{key}"
        else:
            trace = authorship.split_key(key)[1] or ""
            out[line] = "agent:" + str(found.traces.get(trace, {}).get("tool")) if found else None
    return out
