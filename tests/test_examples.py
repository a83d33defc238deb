"""examples/: each example runs as its docstring says, offline, and does what it says it does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO, assert_clean, ops


def test_the_sdk_runner_example_runs_offline_and_records_each_call(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "GITSPACE_"))}
    done = subprocess.run([sys.executable, str(REPO / "examples" / "sdk_runner.py"), "sdk-run"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = done.stdout.splitlines()
    assert said[:2] == ["Offline: a script plays the model.",
                        "Noted: no sugar, in memory and in notes/tea.md."]
    root = tmp_path / "sdk-run"
    made = [(op.tool, op.agent, op.args.get("path")) for op in ops(root) if op.tool != "init"]
    assert made == [("memory", "sdk-runner", "/memories/tea.md"),
                    ("create", "sdk-runner", "notes/tea.md")]
    assert (root / "notes" / "tea.md").read_text() == "Tea: no sugar.\n"
    assert (root / "memories" / "tea.md").read_text() == "no sugar\n"
    assert_clean(root)


def test_the_sdk_runner_example_refuses_a_folder_that_is_taken(tmp_path: Path) -> None:
    (tmp_path / "sdk-run" / ".git").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "GITSPACE_"))}
    done = subprocess.run([sys.executable, str(REPO / "examples" / "sdk_runner.py"), "sdk-run"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "already a git repository" in done.stderr
    assert "Traceback" not in done.stderr
    assert [p.name for p in (tmp_path / "sdk-run").iterdir()] == [".git"]  # nothing written
