"""What every fake model server in tests/ shares: scripted turns, recorded requests, and a proxy
that fails the test on any attempt to leave 127.0.0.1.

A fake (``fake_anthropic``, ``fake_responses``, ``fake_gemini``) is a ``Script``: turns queued in
order (or per session, for harnesses that say which session a request is for), each with an
optional ``check(body)`` that asserts on the request it answers. A failed check, a request with no
turn left, or a request for any other host is recorded in ``failures`` and re-raised by
``done()`` and by the fixture that serves it, so a harness that calls the model too often, sends
the wrong thing, or tries to reach the internet cannot pass.

The server is also what every proxy variable of the harness names (``hermetic_env``): a
``CONNECT``, or a request whose target names another host, is such an attempt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest

Check = Callable[[dict[str, Any]], None]
ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Turn:
    status: int
    body: dict[str, Any]
    check: Check | None = None


@dataclass
class Script:
    """Scripted turns (in order, or per session) and what was asked of them."""

    turns: deque[Turn] = field(default_factory=deque)
    sessions: dict[str, deque[Turn]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, session: str | None) -> deque[Turn]:
        return self.turns if session is None else self.sessions.setdefault(session, deque())

    def next_turn(self, body: dict[str, Any], headers: dict[str, str],
                  session: str | None = None) -> Turn | None:
        """Record the request and hand back the turn that answers it (its check run), or None
        (recorded as a failure) when no turn is left."""
        self.requests.append(body)
        self.headers.append(headers)
        queue = self.sessions[session] if session in self.sessions else self.turns
        if not queue:
            self.fail(f"request {len(self.requests)} arrived with no scripted turn left"
                      + (f" (session {session})" if session else ""))
            return None
        turn = queue.popleft()
        if turn.check:
            try:
                turn.check(body)
            except BaseException as e:  # noqa: BLE001  (reported by done())
                self.failures.append(e)
        return turn

    def done(self) -> None:
        """Raise the first failed check, and fail if scripted turns were never asked for."""
        if self.failures:
            raise self.failures[0]
        assert not self.turns, f"{len(self.turns)} scripted turn(s) were never requested"
        for session, queue in self.sessions.items():
            assert not queue, f"{len(queue)} turn(s) scripted for session {session} never requested"

    def fail(self, message: str) -> None:
        self.failures.append(AssertionError(message))


class Handler(BaseHTTPRequestHandler):
    """The common part of every fake's request handler: JSON bodies and replies, server-sent
    events, and the refusal of any request for another host."""

    protocol_version = "HTTP/1.1"
    fake: Script  # set by ``serve``

    def body(self) -> dict[str, Any]:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            data = json.loads(raw or b"{}")
        except ValueError:
            self.fake.fail(f"{self.command} {self.path} sent a body that is not JSON: {raw[:200]!r}")
            return {}
        return data if isinstance(data, dict) else {"body": data}

    def leaving(self) -> bool:
        """A proxied request for another host: record the attempt and refuse it."""
        host = self.path if self.command == "CONNECT" else urlsplit(self.path).netloc
        if not host:
            return False
        self.fake.fail(f"the client tried to reach {host} outside the fake ({self.command})")
        self.send_response(403)
        self.send_header("content-length", "0")
        self.end_headers()
        self.close_connection = True
        return True

    def do_CONNECT(self) -> None:  # noqa: N802
        self.leaving()

    def send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_fake_{len(self.fake.requests)}")
        self.end_headers()
        self.wfile.write(data)

    def send_events(self, events: Iterator[tuple[str | None, dict[str, Any]]]) -> None:
        """Stream ``(event name or None, data)`` pairs as server-sent events, then close."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.send_header("request-id", f"req_fake_{len(self.fake.requests)}")
        self.end_headers()
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def unexpected(self) -> None:
        self.fake.fail(f"unexpected request {self.command} {self.path}")
        self.send_json(404, {"error": {"message": f"no such endpoint in the fake: {self.path}"}})

    def log_message(self, *args: Any) -> None:
        pass


S = TypeVar("S", bound=Script)


@contextmanager
def serve(fake: S, handler: type[Handler]) -> Iterator[S]:
    """Serve ``fake`` on 127.0.0.1 (a free port) while the block runs; its first failure is
    raised afterwards."""
    bound = type(handler.__name__, (handler,), {"fake": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), bound)
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
    if fake.failures:
        raise fake.failures[0]


# -- the harness binaries -------------------------------------------------------------------


def installed(path: Path, title: str, target: str) -> Path:
    """The harness binary at ``path``; fails the test (never skips) with the make target that
    installs it when it is missing."""
    if not os.access(path, os.X_OK):
        pytest.fail(f"{title} is not installed at {path}. Run 'make {target}' (make test does it) "
                    "to install it from npm.", pytrace=False)
    return path


def hermetic_env(home: Path, fake: Script, extra: dict[str, str | None] | None = None
                 ) -> dict[str, str]:
    """A harness's environment: HOME in a folder of the test's, every proxy variable at the fake
    (so any other host fails the test), no user git configuration, and the venv's bin first on
    PATH so that hooks written as plain ``gitspace ...`` commands find this checkout's gitspace.
    ``extra`` adds variables (None removes one)."""
    proxy = fake.base_url
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin",
                                 "/bin"]),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy, "http_proxy": proxy,
        "ALL_PROXY": proxy, "all_proxy": proxy,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
        "GITSPACE_PACK_THRESHOLD": "0",
    }
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def run_gitspace(env: dict[str, str], root: Path, *args: str, check: bool = True,
                 path: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``gitspace -C ROOT ARGS`` as the person runs it beside their harness: in the harness's
    own environment (its HOME holds the harness's user settings), with ``path`` (the harness's
    bin folder) first on PATH when given."""
    if path is not None:
        env = {**env, "PATH": os.pathsep.join([str(path), env["PATH"]])}
    proc = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), *args], env=env,
                          capture_output=True, text=True, timeout=120)
    assert not check or proc.returncode == 0, f"gitspace {args}:\n{proc.stdout}{proc.stderr}"
    return proc
