"""What ``gitspace hooks install`` and ``uninstall`` do for a checkout's resident recorder.

Invariants:
- ``set_up`` gives the checkout a resident (its port and secret: ``home.prepare``); ``http_hooks``
  also says how a harness that posts its events reaches it (Claude Code): its URL, its secret,
  and the command beside it. That command asks bash whether the resident listens (a connection
  to its port through bash's ``/dev/tcp``, opened and closed at once: no process is started,
  and a dead resident's port refuses at once, whatever became of its pid) and does nothing more
  when it does; when it does not, it runs ``gitspace hook NAME`` on the same payload, which
  records the call in its own process (and starts a new resident: ``client.without``).
- ``take_down`` stops the checkout's resident (it finishes the request it is recording),
  records what a killed one left, and removes everything it kept.
"""

from __future__ import annotations

import io
import os
import shlex
import signal
import time
from pathlib import Path

from ..settings import Resident
from . import home, journal

STOP_WAIT = 5.0  # seconds a stopping resident has to finish the request it records


def set_up(gitdir: Path) -> tuple[int, str]:
    return home.prepare(gitdir)


def http_hooks(gitdir: Path, program: str, name: str, flags: tuple[str, ...] = ()) -> Resident:
    """How harness ``name``'s hooks reach this checkout's resident (see the docstring); ``flags``:
    the hook command's (``--commit-transcript``), which the URL carries too."""
    port, secret = set_up(gitdir)
    record = f"{program} hook {shlex.quote(name)}" + "".join(f" {f}" for f in flags)
    asks = f"{{ : <>/dev/tcp/{home.HOST}/{port}; }} 2>/dev/null || exec {record}"
    otherwise = f"exec /bin/bash -c {shlex.quote(asks)}"
    query = "?" + "&".join(f.lstrip("-") for f in flags) if flags else ""
    return Resident(f"http://{home.HOST}:{port}/hook/{name}{query}", secret, otherwise)


def take_down(gitdir: Path, root: Path) -> bool:
    """Stop the checkout's resident and forget it (see the docstring); was one set up here?"""
    if home.port(gitdir) is None and not (gitdir / home.FOLDER).exists():
        return False
    pid = home.alive(gitdir)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT
        while home.alive(gitdir) == pid and time.monotonic() < deadline:
            time.sleep(0.02)
        if home.alive(gitdir) == pid:
            os.kill(pid, signal.SIGKILL)
    if journal.left(gitdir):
        from ..hook import run

        journal.replay(gitdir, lambda name, flags, payload: run(name, set(flags), payload,
                                                                io.StringIO(), str(root)))
    home.forget(gitdir)
    return True
