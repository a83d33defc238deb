"""A fake Anthropic Messages API on 127.0.0.1 for tests: scripted turns, recorded requests.

Tests talk to it through the real SDK (``fake.client()``) or the real ``claude`` binary, so what
is checked is what they really sent. Each scripted turn may carry a ``check(body)`` that asserts on
the request it answers; an assertion there fails the test (it is re-raised by ``fake.done()`` and
by the fixture). A request with no turn left is answered 500 and recorded as a failure, so a loop
that calls the model too often cannot pass.

A request with ``"stream": true`` (Claude Code always streams) is answered with the same scripted
message as server-sent events, in the order the real API sends them: ``message_start``, per block
``content_block_start`` / ``content_block_delta`` (``text_delta``, or the tool input as
``input_json_delta`` in two pieces, as the API splits it) / ``content_block_stop``, then
``message_delta`` (stop reason, usage) and ``message_stop``. An error turn is an HTTP error before
any event, as the API answers a bad request.

Turns scripted with ``session=ID`` answer only requests carrying the header
``X-Claude-Code-Session-Id: ID`` (``claude --session-id ID`` sets it), so several Claude Code
sessions can run against one fake at once, each on its own script. The fake is also the proxy
Claude Code is told to use for everything that is not loopback: a ``CONNECT`` (or any request for
another host) is an attempt to leave the machine and fails the test, naming the host.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

Check = Callable[[dict[str, Any]], None]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(id: str, name: str, input: dict[str, Any] | None = None) -> dict[str, Any]:  # noqa: A002
    return {"type": "tool_use", "id": id, "name": name, "input": input or {}}


@dataclass
class Turn:
    status: int
    body: dict[str, Any]
    check: Check | None = None
    stream: bool = False


SESSION_HEADER = "x-claude-code-session-id"


@dataclass
class FakeAnthropic:
    turns: deque[Turn] = field(default_factory=deque)
    sessions: dict[str, deque[Turn]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)
    port: int = 0

    # -- scripting ---------------------------------------------------------------------------

    def reply(self, *content: dict[str, Any], stop_reason: str = "end_turn",
              check: Check | None = None, usage: dict[str, int] | None = None,
              session: str | None = None) -> FakeAnthropic:
        queue = self._queue(session)
        n = len(self.requests) + len(queue) + 1
        body = {"id": f"msg_fake_{n}", "type": "message", "role": "assistant",
                "model": "fake-model", "content": list(content), "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": usage or {"input_tokens": 100 * n, "output_tokens": 10}}
        queue.append(Turn(200, body, check))
        return self

    def error(self, status: int, kind: str, message: str, check: Check | None = None,
              session: str | None = None) -> FakeAnthropic:
        body = {"type": "error", "error": {"type": kind, "message": message}}
        self._queue(session).append(Turn(status, body, check))
        return self

    def _queue(self, session: str | None) -> deque[Turn]:
        return self.turns if session is None else self.sessions.setdefault(session, deque())

    # -- inspection --------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, **options: Any) -> Any:
        import anthropic

        return anthropic.Anthropic(api_key="test-key-not-secret", base_url=self.base_url,
                                   max_retries=0, **options)

    def done(self) -> None:
        """Raise the first failed check, and fail if scripted turns were never asked for."""
        if self.failures:
            raise self.failures[0]
        assert not self.turns, f"{len(self.turns)} scripted turn(s) were never requested"
        for session, queue in self.sessions.items():
            assert not queue, f"{len(queue)} turn(s) scripted for session {session} never requested"

    def fail(self, message: str) -> None:
        self.failures.append(AssertionError(message))

    # -- serving -----------------------------------------------------------------------------

    def answer(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if path.endswith("/count_tokens"):
            return 200, {"input_tokens": len(json.dumps(body)) // 4}
        self.requests.append(body)
        self.headers.append(headers)
        session = {k.lower(): v for k, v in headers.items()}.get(SESSION_HEADER)
        queue = self.sessions[session] if session in self.sessions else self.turns
        if not queue:
            failure = AssertionError(f"request {len(self.requests)} arrived with no scripted turn left"
                                     + (f" (session {session})" if session else ""))
            self.failures.append(failure)
            return 500, {"type": "error", "error": {"type": "api_error", "message": str(failure)}}
        turn = queue.popleft()
        if turn.check:
            try:
                turn.check(body)
            except BaseException as e:  # noqa: BLE001  (reported by done())
                self.failures.append(e)
        return turn.status, turn.body


def _handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802
            if self._leaving():
                return
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?")[0]
            if not path.startswith("/v1/messages"):
                fake.fail(f"unexpected request POST {self.path}")
                self._send(404, {"type": "error", "error": {"type": "not_found_error",
                                                            "message": self.path}})
                return
            status, payload = fake.answer(path, body, dict(self.headers))
            if body.get("stream") and status == 200 and payload.get("type") == "message":
                self._stream(payload)
            else:
                self._send(status, payload)

        def do_HEAD(self) -> None:  # noqa: N802
            # Claude Code's connectivity probe (HEAD /api/hello) when non-essential traffic is on.
            if not self._leaving():
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

        def do_CONNECT(self) -> None:  # noqa: N802
            self._leaving()

        do_GET = do_HEAD  # noqa: N815

        def _leaving(self) -> bool:
            """A proxied request for another host: record the attempt and refuse it."""
            host = self.path if self.command == "CONNECT" else urlsplit(self.path).netloc
            if not host:
                return False
            fake.fail(f"the client tried to reach {host} outside the fake ({self.command})")
            self.send_response(403)
            self.send_header("content-length", "0")
            self.end_headers()
            self.close_connection = True
            return True

        def _stream(self, message: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.send_header("request-id", f"req_fake_{len(fake.requests)}")
            self.end_headers()
            for name, data in sse_events(message):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
            self.close_connection = True

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", f"req_fake_{len(fake.requests)}")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def sse_events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events the Messages API streams for ``message``, in order."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None,
             "usage": {"input_tokens": usage.get("input_tokens", 0), "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {**block, "input": {}}}
            raw = json.dumps(block["input"])
            for piece in (raw[: len(raw) // 2], raw[len(raw) // 2:]):
                yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "input_json_delta",
                                                        "partial_json": piece}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "text_delta", "text": block["text"]}}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": usage.get("output_tokens", 0)}}
    yield "message_stop", {"type": "message_stop"}


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
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
