"""docs/harnesses.md, walked literally: its ``sh`` blocks run in order, in one shell, in a
workspace where a Claude Code session (played through its hooks: tests/claude_session.py) wrote
three files. Lines that start a harness itself (``claude``, ``codex``) are not run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from claude_session import three_writes
from conftest import REPO, ops

import gitspace

DOC = REPO / "docs" / "harnesses.md"
NOT_RUN = ("claude", "codex", "gemini")


def commands() -> list[str]:
    blocks = re.findall(r"^```sh\n(.*?)^```", DOC.read_text(), re.M | re.S)
    return [line for block in blocks for line in block.splitlines()
            if line.strip() and line.split()[0] not in NOT_RUN]


def test_every_sh_block_runs_as_written(tmp_path: Path, hermetic: Path) -> None:
    root = tmp_path / "ws"
    gitspace.init(root).close()
    session = three_writes(root, hermetic)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("GITSPACE_AGENT", None)
    script = "\n".join(["set -euo pipefail", *commands()])
    proc = subprocess.run(["bash", "-c", script], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    forked = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert forked["command"] == f"claude --resume {forked['session']}"
    second = next(op for op in ops(root, "main") if op.tool_use_id == "toolu_w2")
    assert f"fork/{second.op_id[-8:].lower()}" in subprocess.run(
        ["git", "branch"], cwd=root, capture_output=True, text=True).stdout
    assert session.transcript.with_name(f"{forked['session']}.jsonl").exists()
