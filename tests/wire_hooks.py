"""A hook that only records what a harness hands it, for the wire tests of every harness binary.

``install(path)`` writes the recorder script; the command it returns appends one JSON line per
call to the log: the payload as received, and under ``"_transcript"`` the transcript the payload
names as it was at that moment (its lines, parsed), so a test can say what a hook could read
there when it ran.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

SCRIPT = r'''
import json, sys
payload = json.loads(sys.stdin.read())
lines = []
try:
    with open(payload.get("transcript_path") or "", encoding="utf-8") as f:
        for line in f:
            try:
                lines.append(json.loads(line))
            except ValueError:
                pass
except OSError:
    pass
with open(sys.argv[1], "a", encoding="utf-8") as log:
    log.write(json.dumps({**payload, "_transcript": lines}) + "\n")
if len(sys.argv) > 2:
    print(sys.argv[2])
'''


def install(folder: Path, log: Path, stdout: str = "") -> str:
    """Write the recorder into ``folder``; the shell command a harness's hook settings run."""
    script = folder / "record_hook.py"
    script.write_text(SCRIPT)
    return " ".join(shlex.quote(a) for a in [sys.executable, str(script), str(log),
                                             *([stdout] if stdout else [])])


def payloads(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
