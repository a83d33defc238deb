"""The README, walked literally: every command of its ``sh`` blocks, in order, in one shell, in a
copy of this checkout, with a fresh HOME and a PATH that has no virtualenv on it, so ``gitspace``
is found only where the README's ``make install`` puts it.

Two lines are not run: ``make test``, which is this very suite (it runs in CI on its own), and
``claude``, which starts Claude Code's interactive session (tests/harness/test_harness*.py drive it). The
``text`` blocks show syntax with placeholders and are not commands. This is the slowest test (two
virtualenvs are built, as a new user's machine would); nothing else builds them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO, clean_copy

NOT_RUN = {"make test", "claude"}  # this suite itself; an interactive Claude Code session


def readme_commands() -> list[str]:
    """The lines of every ```sh block, in order (comments kept: bash ignores them)."""
    blocks = re.findall(r"^```sh\n(.*?)^```", (REPO / "README.md").read_text(), re.M | re.S)
    lines = [line for block in blocks for line in block.splitlines() if line.strip()]
    return [line for line in lines if line.split("#")[0].strip() not in NOT_RUN]


def test_every_readme_command_runs_as_written(tmp_path: Path) -> None:
    commands = readme_commands()
    assert commands[0].startswith("make demo") and "make install" in commands
    clone, home = tmp_path / "gitspace", tmp_path / "home"
    clone.mkdir()
    home.mkdir()
    clean_copy(clone)
    keep = ("LANG", "LC_ALL", "TERM", "TMPDIR", "http_proxy", "https_proxy", "no_proxy")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("PIP_")}
    env.update(HOME=str(home), PATH="/usr/local/bin:/usr/bin:/bin", GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="Reader", GIT_AUTHOR_EMAIL="reader@example.com",
               GIT_COMMITTER_NAME="Reader", GIT_COMMITTER_EMAIL="reader@example.com")
    assert shutil.which("gitspace", path=env["PATH"]) is None  # found only where make install puts it
    script = "\n".join([
        "set -euo pipefail",
        *(f"echo '>>> {c.split('#')[0].strip().replace(chr(39), '')}'\n{c}" for c in commands),
        "echo '>>> where'", "command -v gitspace",
    ])
    proc = subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=1500)
    transcript = proc.stdout + proc.stderr
    assert proc.returncode == 0, transcript[-6000:]
    assert proc.stdout.strip().splitlines()[-1] == str(home / ".local" / "bin" / "gitspace")
    launcher = home / ".local" / "bin" / "gitspace"
    assert launcher.is_symlink() and ".local/share/gitspace/venv" in os.readlink(launcher)
    for expected in ("Initialised gitspace workspace", "Checkpoint before-refactor saved",
                     "Restored checkpoint before-refactor", "Committed outside changes",
                     "Every op parses", "exit 4: the policy could not act"):
        assert expected in transcript, expected
    assert "Traceback" not in transcript and "gitspace hit a bug" not in transcript


def test_calling_an_agent_from_a_program_runs_as_written(tmp_path: Path) -> None:
    """The Python example of "Calling an agent from a program", offline, as a reader runs it
    beside the checkout's sample_workspace."""
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Calling an agent from a program\n", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"^```python\n(.*?)^```", section, re.M | re.S)
    shutil.copytree(REPO / "sample_workspace", tmp_path / "sample_workspace")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "GITSPACE_"))}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert re.fullmatch(r"True 4 [0-9A-Z]{26}", first), first
    assert second == "24 ops: move, restore"
