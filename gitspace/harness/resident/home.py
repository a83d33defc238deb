"""What a checkout's resident recorder keeps, under ``<git dir>/gitspace/resident/``, and whether
one is running.

Invariants:
- ``port`` and ``secret`` are written by ``hooks install`` (``prepare``) and read by the server
  and its clients; the secret is 256 random bits, mode 600, and never printed. ``pid`` names the
  live server: written once its socket is bound, removed when it stops (a killed one leaves it:
  ``alive`` asks the process). Every file is read and written without following a link
  (``storage/statefiles.py``).
- Nothing here is a record of truth: a checkout with none of it records in each hook's own
  process, as before.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...storage import statefiles

FOLDER = "gitspace/resident"  # below the checkout's git dir
PORT, SECRET, PID = f"{FOLDER}/port", f"{FOLDER}/secret", f"{FOLDER}/pid"
LOG = "log"  # what the server says, beside them (its stderr)
HOST = "127.0.0.1"


def folder(gitdir: Path) -> Path:
    return statefiles.folder(gitdir, *FOLDER.split("/"))


def _read(gitdir: Path, rel: str) -> str | None:
    try:
        raw = statefiles.read(gitdir, rel, limit=4096)
    except (OSError, statefiles.StateRefused):
        return None
    return raw.decode("ascii", "replace").strip() if raw else None


def port(gitdir: Path) -> int | None:
    """The port the checkout's resident listens on (None: no resident is set up here)."""
    text = _read(gitdir, PORT)
    return int(text) if text and text.isdigit() and 0 < int(text) < 65536 else None


def secret(gitdir: Path) -> str | None:
    return _read(gitdir, SECRET)


def prepare(gitdir: Path) -> tuple[int, str]:
    """The port and secret of this checkout's resident, made on first use: a port free now on
    the loopback address, and a new secret."""
    import secrets
    import socket

    found, key = port(gitdir), secret(gitdir)
    if found is None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((HOST, 0))
            found = probe.getsockname()[1]
        statefiles.write(gitdir, PORT, f"{found}\n".encode())
    if not key:
        key = secrets.token_urlsafe(32)
        statefiles.write(gitdir, SECRET, f"{key}\n".encode(), mode=0o600)
    return found, key


def alive(gitdir: Path) -> int | None:
    """The pid of the checkout's running resident, or None."""
    text = _read(gitdir, PID)
    if not text or not text.isdigit():
        return None
    pid = int(text)
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return None  # (a pid the system gave another user's process since)
    return pid


def forget(gitdir: Path) -> None:
    """Remove everything the checkout's resident kept (its journal included)."""
    statefiles.remove_tree(gitdir, FOLDER)
