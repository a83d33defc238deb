"""docs/harnesses.md, walked literally: every ``sh`` block, in order, in one shell, in a fresh
folder with a fresh HOME, and this checkout's ``gitspace`` first on PATH (``text`` blocks show
commands that need a harness binary and are not run)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_every_sh_block_runs_as_written(tmp_path: Path) -> None:
    text = (REPO / "docs" / "harnesses.md").read_text()
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)
    assert len(blocks) >= 2
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "LANG": "C.UTF-8", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "Reader", "GIT_AUTHOR_EMAIL": "reader@example.com",
           "GIT_COMMITTER_NAME": "Reader", "GIT_COMMITTER_EMAIL": "reader@example.com"}
    script = "set -euo pipefail\n" + "".join(f"echo '>>> block {i}'\n{b}"
                                             for i, b in enumerate(blocks))
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
