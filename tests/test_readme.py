"""The README, walked literally: every ``sh`` and ``python`` block, in order, in one shell, in a
fresh copy of this checkout, with a fresh HOME and a PATH that has no virtualenv on it, so
``gitspace`` is found only where the README's ``make install`` puts it and ``import gitspace``
works only in the ``.venv/bin/python`` the README says runs the Python blocks.

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
from pathlib import Path

from conftest import REPO, clean_copy

NOT_RUN = {"make test", "claude"}  # this suite itself; an interactive Claude Code session


PYTHON = ".venv/bin/python"  # what the README says runs its Python blocks


def readme_commands() -> list[str]:
    """What the README's blocks run, in order: each line of an ```sh block (comments kept: bash
    ignores them), and each ```python block whole, handed to PYTHON."""
    text = (REPO / "README.md").read_text()
    commands = []
    for kind, block in re.findall(r"^```(sh|python)\n(.*?)^```", text, re.M | re.S):
        if kind == "python":
            commands.append(f"{PYTHON} - <<'PYTHON'\n{block}PYTHON")
            continue
        commands += [line for line in block.splitlines()
                     if line.strip() and line.split("#")[0].strip() not in NOT_RUN]
    return commands


def test_every_readme_block_runs_as_written(tmp_path: Path) -> None:
    commands = readme_commands()
    assert commands[0].startswith("make demo") and "make install" in commands
    assert sum(c.startswith(PYTHON) for c in commands) >= 2
    clone, home, tmp = tmp_path / "gitspace", tmp_path / "home", tmp_path / "tmp"
    for folder in (clone, home, tmp):
        folder.mkdir()
    clean_copy(clone)
    keep = ("LANG", "LC_ALL", "TERM", "http_proxy", "https_proxy", "no_proxy")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("PIP_")}
    env.update(HOME=str(home), PATH="/usr/local/bin:/usr/bin:/bin", GIT_CONFIG_NOSYSTEM="1",
               TMPDIR=str(tmp), GIT_AUTHOR_NAME="Reader", GIT_AUTHOR_EMAIL="reader@example.com",
               GIT_COMMITTER_NAME="Reader", GIT_COMMITTER_EMAIL="reader@example.com")
    assert shutil.which("gitspace", path=env["PATH"]) is None  # found only where make install puts it
    script = "\n".join([
        "set -euo pipefail",
        *(f"echo '>>> {_label(c)}'\n{c}" for c in commands),
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
                     "Every op parses", "exit 4: the policy could not act",
                     "True File created successfully at: notes/plan.md",  # the first Python block
                     "Noted: no sugar", "sdk-runner: create notes/tea.md",  # examples/sdk_runner.py
                     "24 ops: move, restore"):  # the ask() block
        assert expected in transcript, expected
    assert re.search(r"^True 4 [0-9A-Z]{26}$", transcript, re.M), transcript[-3000:]
    assert "Traceback" not in transcript and "gitspace hit a bug" not in transcript
    assert not list(tmp.glob("gitspace-demo-*"))  # make demo leaves no temporary folder behind
    _the_demos_closing_commands_run_as_printed(transcript, clone, env)


def _label(command: str) -> str:
    """The line the transcript shows before ``command`` (quotes dropped: it is echoed in them)."""
    return command.splitlines()[0].split("#")[0].strip().replace("'", "")


def _the_demos_closing_commands_run_as_printed(transcript: str, clone: Path,
                                               env: dict[str, str]) -> None:
    """``make demo`` ends with commands to try: each runs as printed, where the reader is (its
    gitspace is .venv's: make install comes later). ``gitspace ui`` serves until stopped, so only
    its spelling is checked."""
    demo = transcript.split(">>> make demo\n", 1)[1].split("\n>>> ", 1)[0]
    tail = demo.split("\nInspect it with git:\n", 1)[1]
    shown = [line.strip() for line in tail.splitlines() if line.startswith("  ")]
    ui = [c for c in shown if " ui " in c]
    assert ui == [f".venv/bin/gitspace ui {clone / '.cache' / 'demo'}"], shown
    for command in [c for c in shown if c not in ui]:
        done = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip(), (command, done.stderr)
