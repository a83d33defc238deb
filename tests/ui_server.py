"""Helpers for the web view's tests: the real ``gitspace ui`` in a child process, and plain HTTP.

The server is started exactly as a user starts it (``python -m gitspace ui DIR --port 0``); the
port it picked is read from the line it prints. It is stopped by its process id when the block
ends, whatever happened inside.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@contextmanager
def serving(root: Path, *extra: str) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT``) of a view of ``root`` running for the block."""
    proc = subprocess.Popen([sys.executable, "-m", "gitspace", "ui", str(root), "--port", "0",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
        if not found:
            proc.kill()
            _, err = proc.communicate(timeout=10)
            raise AssertionError(f"gitspace ui did not start: {line!r} {err}")
        yield found.group(1)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def fetch(url: str, *, method: str = "GET", headers: dict[str, str] | None = None,
          timeout: float = 30) -> tuple[int, str]:
    """(status, body) of one request; HTTP errors are answers too, not exceptions."""
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with _NO_PROXY.open(request, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
