"""docs/provenance.md, walked literally: every ``sh`` block, in order, in one shell, in a fresh
folder with a fresh HOME, with this checkout's gitspace on PATH; and what the page says each
step shows is what it shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO

DOC = REPO / "docs" / "provenance.md"


def commands() -> list[str]:
    blocks = re.findall(r"^```sh\n(.*?)^```", DOC.read_text(), re.M | re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_every_block_of_the_provenance_page_runs_as_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                                       "/usr/local/bin", "/usr/bin", "/bin"]),
           "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "TMPDIR": str(tmp_path)}
    script = "\n".join(["set -euo pipefail", *(f"echo '>>> {c[:60].replace(chr(39), '')}'\n{c}"
                                               for c in commands())])
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-5000:]
    assert "Traceback" not in out and "hit a bug" not in out
    shown = out.split(">>> git notes --ref=ai show HEAD", 1)[1].split(">>>", 1)[0]
    note = shown.split("---", 1)[0]
    assert "parse.py" in note and "1-2" in note and "h_" in note and " 3" in note
    assert '"author": "Zoë van Dijk <zoe@example.invalid>"' in shown
    assert "3 line(s) added: 2 by agents, 1 by people" in out
    assert "refs/notes/ai" in out.split(">>> git ls-remote origin refs/notes/ai", 1)[1]
    clone = out.split(">>> gitspace blame parse.py\n", 2)[2].split(">>>", 1)[0]
    assert "claude-code" in clone and "op " in clone  # in the clone, from the notes alone
    assert "Purged .env from 1 recorded line(s)" in out
