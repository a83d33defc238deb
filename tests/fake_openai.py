"""The smallest fake OpenAI Responses API the Codex fork tests need, on 127.0.0.1: scripted
replies (streamed as server-sent events), recorded requests.

Written for tests/harness/test_codex_fork.py before the Codex engineer's own fake exists; the two
are to be merged. Each ``POST /v1/responses`` takes the next scripted reply of its session (the
``session-id`` header Codex sends; unscripted sessions share one queue), optionally checked
against the request, and streams ``response.created``, each output item as
``response.output_item.added`` / ``.done``, then ``response.completed``. A request with nothing
scripted, any other path, or a proxied request for another host (the fake is also the proxy) is
recorded as a failure that fails the test.
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


def patch_call(call_id: str, patch: str) -> dict[str, Any]:
    """An ``apply_patch`` call (Codex's freeform tool) with ``patch`` as its input."""
    return {"type": "custom_tool_call", "name": "apply_patch", "call_id": call_id,
            "status": "completed", "input": patch}


def add_file(call_id: str, path: str, text: str) -> dict[str, Any]:
    lines = "".join(f"+{line}\n" for line in text.splitlines())
    return patch_call(call_id, f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n")


def say(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text}]}


@dataclass
class FakeOpenAI:
    queues: dict[str | None, deque[tuple[list[dict[str, Any]], Check | None]]] = field(
        default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)
    port: int = 0

    def reply(self, *items: dict[str, Any], session: str | None = None,
              check: Check | None = None) -> FakeOpenAI:
        self.queues.setdefault(session, deque()).append((list(items), check))
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def done(self) -> None:
        if self.failures:
            raise self.failures[0]
        left = {s: len(q) for s, q in self.queues.items() if q}
        assert not left, f"scripted replies never requested: {left}"

    def answer(self, body: dict[str, Any], session: str | None) -> list[dict[str, Any]] | None:
        self.requests.append(body)
        queue = self.queues.get(session) if self.queues.get(session) else self.queues.get(None)
        if not queue:
            self.failures.append(AssertionError(
                f"request {len(self.requests)} (session {session}) had no scripted reply"))
            return None
        items, check = queue.popleft()
        if check is not None:
            try:
                check(body)
            except BaseException as e:  # noqa: BLE001  (reported by done() and the fixture)
                self.failures.append(e)
        return items


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.split("?")[0] != "/v1/responses":
                fake.failures.append(AssertionError(f"unexpected request POST {self.path}"))
                self._empty(404)
                return
            items = fake.answer(body, self.headers.get("session-id"))
            if items is None:
                self._empty(500)
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for name, data in _events(items, len(fake.requests)):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
            self.close_connection = True

        def do_GET(self) -> None:  # noqa: N802
            if self.path.startswith("http"):  # a proxied request: leaving the machine
                fake.failures.append(AssertionError(f"Codex tried to reach {self.path}"))
            self._empty(404)

        def do_CONNECT(self) -> None:  # noqa: N802
            fake.failures.append(AssertionError(f"Codex tried to reach {self.path}"))
            self._empty(403)
            self.close_connection = True

        def _empty(self, status: int) -> None:
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def _events(items: list[dict[str, Any]], n: int) -> Iterator[tuple[str, dict[str, Any]]]:
    rid = f"resp_fake_{n}"
    yield "response.created", {"type": "response.created", "response": {"id": rid}}
    for k, item in enumerate(items):
        item = {"id": f"item_{n}_{k}", **item}
        for name in ("response.output_item.added", "response.output_item.done"):
            yield name, {"type": name, "output_index": k, "item": item}
    usage = {"input_tokens": 10, "input_tokens_details": None, "output_tokens": 5,
             "output_tokens_details": None, "total_tokens": 15}
    yield "response.completed", {"type": "response.completed",
                                 "response": {"id": rid, "usage": usage}}


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    fake.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
    if fake.failures:
        raise fake.failures[0]
