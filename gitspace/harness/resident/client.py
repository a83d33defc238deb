"""A hook's side of the resident recorder: hand it the call, or record without it.

Invariants:
- ``forward`` hands a payload to the checkout's resident and, once it recorded it (an answer of
  200: the resident keeps a request in its journal until it is recorded), hands back what the
  recording had to say (the notes the hook writes to stderr). Anything else (no resident set
  up, none running, a refusal, no answer in time) is None, and the hook records in its own
  process. It costs a checkout without a resident one file read; with one, a
  connection on the loopback address (standard library sockets: no HTTP client is imported).
- ``without`` is what a hook does first when it records in its own process in a checkout where a
  resident is set up: it records what a killed resident left (``journal.replay``), starts a new
  one in the background for the calls after this one, and says once, plainly, what happened.
  It waits (``READY`` seconds at most) until the new one listens: a session's first call follows
  its ``SessionStart`` at once, and would otherwise find no resident on a loaded machine.
"""

from __future__ import annotations

from pathlib import Path

from ...storage import loose
from . import home

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..events import Event

TIMEOUT = 25.0  # seconds a hook waits for the resident (the harness gives up on it at 30)
READY = 5.0  # seconds a hook that started a resident waits for it to listen
NOTES = "X-Gitspace-Notes"  # a hook asks for the recording's notes instead of the harness's output
SAYS = ("before", "after", "failed", "prompt", "stop")  # the events a person is told about


def forward(start: Path, harness: str, flags: list[str], payload: bytes) -> str | None:
    """What the checkout's resident recorder said once it recorded this call; None when it did
    not (see the module docstring)."""
    found = loose.find(start)
    if found is None:
        return None
    gitdir = found[1]
    port = home.port(gitdir)
    if port is None:
        return None
    key = home.secret(gitdir)
    if not key or home.alive(gitdir) is None:
        return None
    import socket

    query = "?" + "&".join(f.lstrip("-") for f in flags) if flags else ""
    head = (f"POST /hook/{harness}{query} HTTP/1.1\r\nHost: {home.HOST}:{port}\r\n"
            f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
            f"{NOTES}: 1\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
            ).encode()
    answer = b""
    try:
        with socket.create_connection((home.HOST, port), timeout=TIMEOUT) as conn:
            conn.sendall(head + payload)
            while chunk := conn.recv(65536):
                answer += chunk
    except OSError:
        return None
    status, _, rest = answer.partition(b"\r\n")
    if not status.startswith((b"HTTP/1.1 200 ", b"HTTP/1.0 200 ")):
        return None
    return rest.partition(b"\r\n\r\n")[2].decode("utf-8", "replace")


def without(start: Path, harness: str, flags: list[str], event: Event,
            record: Callable[[str, list[str], bytes], object]) -> str | None:
    """Before a hook records in its own process: catch up on what a killed resident left
    (each request it journalled handed to ``record``: harness, flags, payload, as the hook
    records one), start one, and what to tell the person (None: nothing, no resident is set up
    here)."""
    found = loose.find(start)
    if found is None or home.port(found[1]) is None:
        return None
    root, gitdir = found[0], found[1]
    from .journal import left, replay

    if left(gitdir):
        replay(gitdir, record)
    started = start_resident(root, gitdir)
    if event.kind not in SAYS:
        return None
    return ("the resident recorder was not running here, so this call was recorded in the "
            "hook's own process (slower, nothing lost); "
            + ("a new one was started for the calls to come." if started else
               "it could not be started: see 'gitspace hooks status'."))


def _project_dirs(root: Path) -> dict[str, str]:
    """Every harness's project-folder variable naming ``root``: whatever event the resident is
    sent, it records it in this checkout."""
    from ..adapters import specs

    return {s.project_dir: str(root) for s in specs().values() if s.project_dir}


def start_resident(root: Path, gitdir: Path) -> bool:
    """Start the checkout's resident recorder in the background, detached from the hook (it
    outlives it and holds none of its pipes) and wait until it listens (or stopped, or ``READY``
    passed). False when it could not be started. Two started at once are harmless: the second
    finds the port taken and stops."""
    import os
    import subprocess
    import sys
    import time

    from ... import config

    try:
        log = os.open(home.folder(gitdir) / home.LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT
                      | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)  # (a link there is refused)
    except OSError:
        return False
    try:
        server = subprocess.Popen(
            [sys.executable, "-m", "gitspace.harness.resident.server", str(root)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=root, start_new_session=True,
            close_fds=True, env=config.resident_environment(_project_dirs(root)))
    except OSError:
        return False
    finally:
        os.close(log)
    deadline = time.monotonic() + READY
    while home.alive(gitdir) is None and server.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return True
