"""Codex's review of hooks, asked of Codex itself: which of gitspace's hooks it will run, and
trusting exactly those on request.

Codex runs a hook only once someone trusted it: per hook (``<hooks file>:<event>:<group>:
<handler>``), by a hash of its definition, kept in ``config.toml`` under
``[hooks.state."<key>"] trusted_hash`` (``codex-rs/hooks/src/engine/discovery.rs``). A hook
never trusted, or changed since (a moved installation changes the command), is skipped without a
word, and project hooks load only in a project the person trusted.

Invariants:
- gitspace never computes Codex's hash: ``codex app-server`` (the interface Codex's own /hooks
  screen and desktop app use) lists each hook with its ``currentHash`` and ``trustStatus``
  (``hooks/list``), and trusting one is writing that very hash back (``config/batchWrite``),
  as /hooks does. A Codex that hashes differently tomorrow still agrees with itself.
- Only gitspace's own hooks are ever trusted: entries of the one hooks file gitspace wrote whose
  command is exactly the one it wrote. Anything else in that file, in any other file, and the
  project itself (whose trust lets its config, exec policies and MCP commands load) is left to
  the person. After writing, the hooks are listed again: trust is claimed only where Codex says
  so.
- Codex not on PATH, an app-server that answers nothing within ``TIMEOUT`` seconds or answers
  otherwise than expected: ``CodexUnavailable`` with a sentence. Nothing is written then.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import GitspaceError

TIMEOUT = 30.0
TRUSTED = ("trusted", "managed")


class CodexUnavailable(GitspaceError):
    """Codex could not be asked (not installed, or its app-server did not answer)."""


@dataclass(frozen=True)
class Hook:
    """One hook as Codex lists it."""

    key: str
    event: str
    command: str
    source: Path
    status: str  # trusted, untrusted, modified (changed since it was trusted), managed
    current_hash: str

    @property
    def runs(self) -> bool:
        return self.status in TRUSTED


def program() -> str | None:
    """The ``codex`` a person runs: the first on PATH."""
    return shutil.which("codex")


def hooks(cwd: Path, codex: str | None = None) -> list[Hook]:
    """Every hook Codex would consider in ``cwd``, as Codex lists them."""
    with _AppServer(codex) as server:
        return server.hooks(cwd)


def trust(cwd: Path, path: Path, command: str, codex: str | None = None) -> list[Hook]:
    """Have Codex trust gitspace's hooks in ``path`` (those running exactly ``command``); the
    hooks of ``path`` as Codex lists them afterwards."""
    with _AppServer(codex) as server:
        mine = [h for h in server.hooks(cwd) if h.source == path and h.command == command]
        pending = {h.key: {"trusted_hash": h.current_hash} for h in mine if not h.runs}
        if pending:
            server.call("config/batchWrite", {"edits": [
                {"keyPath": "hooks.state", "value": pending, "mergeStrategy": "upsert"}]})
        return [h for h in server.hooks(cwd) if h.source == path]


class _AppServer:
    """``codex app-server`` on stdio: JSON-RPC, one line a message."""

    def __init__(self, codex: str | None) -> None:
        self.codex = codex or program()
        if self.codex is None:
            raise CodexUnavailable("Codex is not on PATH, so gitspace cannot ask it which hooks "
                                   "it trusts.", hint="Install Codex (npm install -g "
                                   "@openai/codex), or review the hooks in Codex with /hooks.")
        self.next_id = 0
        self.deadline = time.monotonic() + TIMEOUT

    def __enter__(self) -> _AppServer:
        assert self.codex is not None
        try:
            self.proc = subprocess.Popen([self.codex, "app-server"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError as e:
            raise CodexUnavailable(f"{self.codex} could not be started ({e.strerror}).",
                                   hint="Check the Codex installation.") from None
        self.buffer = b""
        self.call("initialize", {"clientInfo": {"name": "gitspace", "title": "gitspace",
                                                "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "initialized"})
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()

    def hooks(self, cwd: Path) -> list[Hook]:
        found = self.call("hooks/list", {"cwds": [str(cwd)]})
        try:
            return [Hook(h["key"], h["eventName"], h.get("command") or "", Path(h["sourcePath"]),
                         h["trustStatus"], h["currentHash"])
                    for entry in found["data"] for h in entry["hooks"]]
        except (KeyError, TypeError) as e:
            raise self._odd(f"its hook list lacks {e}") from None

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self._receive()
            if message.get("id") != self.next_id or "method" in message:
                continue  # a notification, or a request of Codex's own: not an answer
            if "error" in message:
                raise self._odd(f"{method} failed: {message['error']}")
            return message.get("result")

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            raise self._odd("it closed its input") from None

    def _receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise self._odd(f"it answered nothing within {TIMEOUT:.0f} seconds")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise self._odd("it exited")
            self.buffer += chunk
            if len(self.buffer) > 64 << 20:
                raise self._odd("it sent over 64 MiB in one message")
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            raise self._odd("it sent a line that is not JSON") from None
        return message if isinstance(message, dict) else {}

    def _odd(self, what: str) -> CodexUnavailable:
        return CodexUnavailable(f"Codex's app-server ({self.codex} app-server) could not be "
                                f"asked about its hooks: {what}.",
                                hint="Review the hooks in Codex with /hooks instead.")


@dataclass(frozen=True)
class Review:
    """What Codex says of gitspace's hooks in one hooks file, and the sentence that says it."""

    state: str  # trusted, untrusted (some or all skipped), unknown (Codex could not be asked)
    note: str


def review(cwd: Path, path: Path, command: str, *, trusting: bool = False,
           codex: str | None = None) -> Review:
    """Ask Codex (having it trust gitspace's hooks in ``path`` first when ``trusting``)."""
    skipped = ("Codex runs a hook only once someone trusted it, and skips the others without a "
               "word, so those calls are not recorded")
    try:
        found = trust(cwd, path, command, codex) if trusting else [
            h for h in hooks(cwd, codex) if h.source == path]
    except CodexUnavailable as e:
        return Review("unknown", f"{e.message} {skipped}: review gitspace's hooks in Codex with "
                                 "/hooks, or run 'gitspace hooks install codex --trust' where "
                                 "Codex is on PATH.")
    mine = [h for h in found if h.command == command]
    if not mine:
        return Review("untrusted", f"Codex does not load {path} at all: it loads a project's "
                                   "hooks only in a project you trust. Trust the folder when "
                                   "Codex asks (or run 'codex exec --trust' here once), then "
                                   "run 'gitspace hooks install codex --trust'.")
    waiting = [h for h in mine if not h.runs]
    if not waiting:
        return Review("trusted", f"Codex trusts gitspace's {len(mine)} hooks there (a changed "
                                 "hook needs trust again: run this with --trust after moving "
                                 "gitspace).")
    return Review("untrusted", f"Codex has not trusted {len(waiting)} of gitspace's {len(mine)} "
                               f"hooks there. {skipped}: review them in Codex with /hooks, or "
                               "run 'gitspace hooks install codex --trust' to have Codex trust "
                               "exactly these.")
