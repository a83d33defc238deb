"""A fake Anthropic Messages API on 127.0.0.1 for tests: scripted turns, recorded requests.

Tests talk to it through the real SDK (``fake.client()``), so what is checked is what the SDK
really sent. Each scripted turn may carry a ``check(body)`` that asserts on the request it answers;
an assertion there fails the test (it is re-raised by ``fake.done()`` and by the fixture). A request
with no turn left is answered 500 and recorded as a failure, so a loop that calls the model too
often cannot pass.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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


@dataclass
class FakeAnthropic:
    turns: deque[Turn] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)
    port: int = 0

    # -- scripting ---------------------------------------------------------------------------

    def reply(self, *content: dict[str, Any], stop_reason: str = "end_turn",
              check: Check | None = None, usage: dict[str, int] | None = None) -> FakeAnthropic:
        n = len(self.requests) + len(self.turns) + 1
        body = {"id": f"msg_fake_{n}", "type": "message", "role": "assistant",
                "model": "fake-model", "content": list(content), "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": usage or {"input_tokens": 100 * n, "output_tokens": 10}}
        self.turns.append(Turn(200, body, check))
        return self

    def error(self, status: int, kind: str, message: str, check: Check | None = None) -> FakeAnthropic:
        body = {"type": "error", "error": {"type": kind, "message": message}}
        self.turns.append(Turn(status, body, check))
        return self

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

    # -- serving -----------------------------------------------------------------------------

    def answer(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if path.endswith("/count_tokens"):
            return 200, {"input_tokens": len(json.dumps(body)) // 4}
        self.requests.append(body)
        self.headers.append(headers)
        if not self.turns:
            failure = AssertionError(f"request {len(self.requests)} arrived with no scripted turn left")
            self.failures.append(failure)
            return 500, {"type": "error", "error": {"type": "api_error", "message": str(failure)}}
        turn = self.turns.popleft()
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
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            status, payload = fake.answer(self.path.split("?")[0], body, dict(self.headers))
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
