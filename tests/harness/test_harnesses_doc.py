"""docs/harnesses.md, walked literally: every ``sh`` block, in order, in one shell, with this
checkout's ``gitspace`` first on PATH (``text`` blocks show commands that need a harness binary
and are not run). The blocks before "Forking a session" run in a fresh folder with a fresh
HOME; that section's run in a workspace where a Claude Code session (played through its hooks:
tests/claude_session.py) wrote three files."""

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
FORKING = "## Forking a session"


def blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)


def test_every_sh_block_runs_as_written(tmp_path: Path) -> None:
    text = DOC.read_text()
    blocks_ = blocks(text[:text.index(FORKING)])
    assert len(blocks_) >= 2
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "LANG": "C.UTF-8", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "Reader", "GIT_AUTHOR_EMAIL": "reader@example.com",
           "GIT_COMMITTER_NAME": "Reader", "GIT_COMMITTER_EMAIL": "reader@example.com"}
    script = "set -euo pipefail\n" + "".join(f"echo '>>> block {i}'\n{b}"
                                             for i, b in enumerate(blocks_))
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said[-4000:]
    assert "Traceback" not in said
    assert "Installed gitspace's Claude Code hooks" in said
    assert "Installed gitspace's Gemini CLI hooks" in said and "Recording Gemini CLI in place" in said
    settings = json.loads((tmp_path / "harness-demo" / ".gemini" / "settings.json").read_text())
    commands = {h["command"] for groups in settings["hooks"].values() for g in groups
                for h in g["hooks"]}
    assert commands == {"gitspace hook gemini-cli"}
    rows = json.loads(proc.stdout[proc.stdout.rindex("\n[") + 1:])
    mine = {(r["harness"], r["scope"]): r for r in rows}
    assert mine[("gemini-cli", "user")]["installed"] is True
    assert (home / ".gemini" / "settings.json").exists()


def test_the_forking_blocks_run_as_written(tmp_path: Path, hermetic: Path) -> None:
    text = DOC.read_text()
    commands = [line for block in blocks(text[text.index(FORKING):])
                for line in block.splitlines() if line.strip()]
    root = tmp_path / "ws"
    gitspace.init(root).close()
    session = three_writes(root, hermetic)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("GITSPACE_AGENT", None)
    proc = subprocess.run(["bash", "-c", "\n".join(["set -euo pipefail", *commands])], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    forked = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert forked["command"] == f"claude --resume {forked['session']}"
    second = next(op for op in ops(root, "main") if op.tool_use_id == "toolu_w2")
    assert f"fork/{second.op_id[-8:].lower()}" in subprocess.run(
        ["git", "branch"], cwd=root, capture_output=True, text=True).stdout
    assert session.transcript.with_name(f"{forked['session']}.jsonl").exists()
