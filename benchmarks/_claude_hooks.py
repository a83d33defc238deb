"""Claude Code's hooks of one event, run as Claude Code runs them, for the hook benchmarks.

Every entry the settings file holds for the event runs at once: a ``command`` through /bin/sh
with the payload on stdin, an ``http`` hook posted to its URL with its headers, on a connection
kept open between calls (as a harness keeps its own); the event is done when the last of them
is. A hook's failure (an exit status, a refused connection) is the harness's to ignore, as
Claude Code does: nothing here asserts what a hook did, the benchmark counts the ops after.
"""

from __future__ import annotations

import http.client
import json
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

TOOL_EVENTS = ("PreToolUse", "PostToolUse")


class Hooks:
    """The hook entries of each event (see the module docstring)."""

    def __init__(self, entries: dict[str, list[dict[str, Any]]]) -> None:
        self.entries = entries
        self.connections: dict[tuple[str, int], http.client.HTTPConnection] = {}

    @classmethod
    def installed(cls, root: Path, name: str) -> Hooks:
        """What ``gitspace hooks install`` wrote into ``.claude/<name>``."""
        settings = json.loads((root / ".claude" / name).read_text())
        return cls({event: [h for group in groups for h in group.get("hooks", [])]
                    for event, groups in settings.get("hooks", {}).items()})

    @classmethod
    def command(cls, command: str) -> Hooks:
        """One command hook for each tool event (a baseline: ``true``)."""
        return cls({event: [{"type": "command", "command": command}] for event in TOOL_EVENTS})

    @property
    def posts(self) -> bool:
        return any(h.get("type") == "http" for hs in self.entries.values() for h in hs)

    def fire(self, event: str, root: Path, data: bytes) -> None:
        procs = []
        for entry in self.entries.get(event, []):
            if entry.get("type", "command") == "command":
                proc = subprocess.Popen(["/bin/sh", "-c", entry["command"]], cwd=root,
                                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
                try:
                    assert proc.stdin is not None
                    proc.stdin.write(data)
                    proc.stdin.close()
                except BrokenPipeError:
                    pass  # (a hook that did not read its payload: the resident's, when it lives)
                procs.append(proc)
        for entry in self.entries.get(event, []):
            if entry.get("type") == "http":
                self._post(entry, data)
        for proc in procs:
            proc.wait()

    def _post(self, entry: dict[str, Any], data: bytes) -> None:
        url = urlsplit(entry["url"])
        key = (url.hostname or "127.0.0.1", url.port or 80)
        for _ in range(2):  # (a kept connection the server closed meanwhile: once more)
            conn = self.connections.get(key) or http.client.HTTPConnection(*key, timeout=30)
            self.connections[key] = conn
            try:
                conn.request("POST", url.path + (f"?{url.query}" if url.query else ""), body=data,
                             headers={**entry.get("headers", {}),
                                      "Content-Type": "application/json"})
                conn.getresponse().read()
                return
            except OSError:  # refused (no resident), or reset: the harness goes on
                conn.close()
                self.connections.pop(key, None)

    def close(self) -> None:
        for conn in self.connections.values():
            conn.close()


def process_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far (0 when it is gone)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    import os

    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
