"""A user's own repository, and how tests read what gitspace must leave alone in it.

Shared by the tests of agents on an existing repository (attach, merge, sync, several agents,
crashes, hostile flips, Claude Code's hooks): import these by name, never from a test module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import git, git_run, gitspace_cli


def make_user_repo(root: Path) -> Path:
    """A user's repository as people have them: a commit, and unstaged, staged, untracked and
    ignored files all at once."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "src").mkdir()
    (root / "README.md").write_text("# project\n")
    (root / "notes.txt").write_text("one\ntwo\nthree\n")
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "the user's first commit")
    # Everything a working checkout has at once:
    (root / "notes.txt").write_text("one\ntwo (being edited)\nthree\n")  # unstaged
    (root / "src" / "app.py").write_text("print('hello')\n")
    git(root, "add", "src/app.py")  # staged
    (root / "new.txt").write_text("not added yet\n")  # untracked
    (root / "build").mkdir()
    (root / "build" / "out.bin").write_bytes(b"\0\1\2")  # ignored
    (root / "debug.log").write_text("ignored log\n")  # ignored
    return root


def add_stash(root: Path) -> None:
    """Give the repository a stash entry, leaving the work tree and index as they were."""
    (root / "README.md").write_text("# project\nstashed line\n")
    git(root, "stash", "push", "-q", "-m", "the user's stash", "--", "README.md")


def users_own(root: Path, *, ignore: tuple[str, ...] = (".claude/settings.local.json",),
              ) -> dict[str, Any]:
    """Everything of a person's checkout gitspace recording in place must leave as it was: HEAD,
    the branch and every ref of theirs, the index byte for byte and its stat (a rewrite with the
    same bytes counts), the stash, tags, ``git status --ignored`` and every work-tree file
    (``ignore``: the harness settings file, the one thing gitspace adds)."""
    index = root / ".git" / "index"
    st = index.stat()
    refs = git(root, "for-each-ref", "--format=%(refname) %(objectname)")
    return {
        "HEAD": (root / ".git" / "HEAD").read_bytes(),
        "refs": [r for r in refs.splitlines() if not r.startswith("refs/gitspace/")],
        "index": index.read_bytes(),
        "index stat": (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size),
        "stash": git(root, "stash", "list", "--format=%H %gs"),
        "tags": git(root, "tag", "--list"),
        "status": sorted(line for line in status(root).split("\0")
                         if line and not any(line[3:].rstrip("/").startswith(i.split("/")[0])
                                             for i in ignore)),
        "files": {k: v for k, v in checkout_state(root)["files"].items() if k not in ignore},
    }


def checkout_state(root: Path) -> dict[str, Any]:
    """Everything of the user's checkout that gitspace must not change, as raw bytes."""
    files = {}
    for folder, dirs, names in os.walk(root):
        if Path(folder) == root:
            dirs.remove(".git")
        for n in names:
            p = Path(folder, n)
            files[p.relative_to(root).as_posix()] = (p.read_bytes(), os.lstat(p).st_mode)
    return {
        "HEAD": (root / ".git" / "HEAD").read_bytes(),
        "head commit": git(root, "rev-parse", "HEAD"),
        "index": (root / ".git" / "index").read_bytes(),
        "files": files,
    }


def status(root: Path) -> str:
    """``git status`` without letting git refresh (rewrite) the index while it looks."""
    return git(root, "--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=all",
               "--ignored")


def fsck(root: Path) -> None:
    proc = git_run(root, "fsck", "--strict", "--no-progress")
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()


def index_entries(root: Path) -> dict[str, str]:
    """Every index entry of the checkout with git's debug fields (stat data included)."""
    out = git(root, "ls-files", "-s", "--debug")
    entries: dict[str, str] = {}
    name = ""
    for line in out.splitlines():
        if not line.startswith(" "):
            name = line.split("\t", 1)[1]
            entries[name] = line
        else:
            entries[name] += "\n" + line
    return entries


def gs(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``gitspace -C cwd ARGS`` in a new process, with no agent name inherited."""
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    return subprocess.run([sys.executable, "-m", "gitspace", "-C", str(cwd), *args],
                          capture_output=True, text=True, env=env, timeout=60)


# -- Claude Code recorded in a person's checkout, as its hooks send their payloads ------------

ONE = "3d7682ec-1111-4222-8333-444455556666"  # Claude Code's session ids: UUIDs of version 4
TWO = "84836b81-aaaa-4bbb-8ccc-ddddeeeeffff"


def hook(root: Path, session: str, event: str, **extra: Any) -> None:
    transcript = root.parent / f"{session}.jsonl"
    body = {"session_id": session, "transcript_path": str(transcript), "cwd": str(root),
            "hook_event_name": event, "prompt_id": "p-1", **extra}
    proc = subprocess.run([sys.executable, "-m", "gitspace", "hook", "claude-code"], cwd=root,
                          input=json.dumps(body).encode(), capture_output=True,
                          env={k: v for k, v in os.environ.items() if not k.startswith("GIT")})
    assert proc.returncode == 0 and b"gitspace:" not in proc.stderr, proc.stderr.decode()


def turn(root: Path, session: str, use_id: str, rel: str, text: str, prompt: str,
         failed: bool = False) -> None:
    """One prompt, one Write (or a failing Bash that still wrote), the turn's end."""
    with (root.parent / f"{session}.jsonl").open("a") as transcript:  # as Claude Code keeps it
        transcript.write(json.dumps({"type": "user", "message": {"role": "user",
                                                                  "content": prompt}}) + "\n")
    hook(root, session, "UserPromptSubmit", prompt=prompt)
    tool, given = ("Bash", {"command": f"echo > {rel}; false"}) if failed else (
        "Write", {"file_path": str(root / rel), "content": text})
    hook(root, session, "PreToolUse", tool_name=tool, tool_input=given, tool_use_id=use_id)
    (root / rel).write_text(text)
    if failed:
        hook(root, session, "PostToolUseFailure", tool_name=tool, tool_input=given,
             tool_use_id=use_id, error="Exit code 1")
    else:
        hook(root, session, "PostToolUse", tool_name=tool, tool_input=given,
             tool_use_id=use_id, tool_response={"success": True})
    hook(root, session, "Stop", stop_hook_active=False)


def claude_code_checkout(tmp_path: Path) -> Path:
    """A person's checkout: two Claude Code sessions, two turns of the first (its second a
    failed shell command that still wrote a file), then one of the second."""
    root = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    (root / "a.md").write_text("a\n")
    git(root, "add", "a.md")
    git(root, "commit", "-q", "-m", "mine")
    assert gitspace_cli(root, "hooks", "install", "claude-code").returncode == 0
    turn(root, ONE, "toolu_1", "plan.md", "# plan\n", "Write the plan\nwith detail")
    turn(root, ONE, "toolu_2", "b.md", "\n", "Make b", failed=True)
    turn(root, TWO, "toolu_3", "c.md", "c\n", "Make c")
    return root
