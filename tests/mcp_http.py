"""A real ``gitspace mcp --transport http`` process on a free loopback port, for the tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


def clean_env() -> dict[str, str]:
    """What a server subprocess gets: no GIT_*, no API keys, the test's empty HOME."""
    return {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "LANG": "C.UTF-8",
            "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
            "GITSPACE_PACK_THRESHOLD": "0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    url: str
    stderr: str = ""  # what the server said, once it stopped
    returncode: int | None = None


@contextmanager
def http_server(root: Path, cwd: Path, timeout: float = 15.0) -> Iterator[Served]:
    """Serve ``root`` until the block ends, then stop it with Ctrl-C as a person would."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitspace", "-C", str(root), "mcp", "--transport", "http",
         "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(), cwd=cwd)
    served = Served(f"http://127.0.0.1:{port}/mcp")
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the server exited early: {proc.communicate()[1]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"nothing listened on 127.0.0.1:{port} within {timeout} s")
                time.sleep(0.05)
        yield served
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, served.stderr = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, served.stderr = proc.communicate()
        served.returncode = proc.returncode
