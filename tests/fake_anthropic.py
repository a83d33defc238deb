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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fake_server import Check, Handler, Script, Turn, serve


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(id: str, name: str, input: dict[str, Any] | None = None) -> dict[str, Any]:  # noqa: A002
    return {"type": "tool_use", "id": id, "name": name, "input": input or {}}


SESSION_HEADER = "x-claude-code-session-id"


@dataclass
class FakeAnthropic(Script):
    # -- scripting ---------------------------------------------------------------------------

    def reply(self, *content: dict[str, Any], stop_reason: str = "end_turn",
              check: Check | None = None, usage: dict[str, int] | None = None,
              session: str | None = None) -> FakeAnthropic:
        queue = self.queue(session)
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
        self.queue(session).append(Turn(status, body, check))
        return self

    # -- inspection --------------------------------------------------------------------------

    def client(self, **options: Any) -> Any:
        import anthropic

        return anthropic.Anthropic(api_key="test-key-not-secret", base_url=self.base_url,
                                   max_retries=0, **options)

    # -- serving -----------------------------------------------------------------------------

    def answer(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if path.endswith("/count_tokens"):
            return 200, {"input_tokens": len(json.dumps(body)) // 4}
        session = {k.lower(): v for k, v in headers.items()}.get(SESSION_HEADER)
        turn = self.next_turn(body, headers, session)
        if turn is None:
            return 500, {"type": "error", "error": {"type": "api_error",
                                                    "message": str(self.failures[-1])}}
        return turn.status, turn.body


class AnthropicHandler(Handler):
    fake: FakeAnthropic

    def do_POST(self) -> None:  # noqa: N802
        if self.leaving():
            return
        body = self.body()
        path = self.path.split("?")[0]
        if not path.startswith("/v1/messages"):
            self.fake.fail(f"unexpected request POST {self.path}")
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                            "message": self.path}})
            return
        status, payload = self.fake.answer(path, body, dict(self.headers))
        if body.get("stream") and status == 200 and payload.get("type") == "message":
            self.send_events(sse_events(payload))
        else:
            self.send_json(status, payload)

    def do_HEAD(self) -> None:  # noqa: N802
        # Claude Code's connectivity probe (HEAD /api/hello) when non-essential traffic is on.
        if not self.leaving():
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

    do_GET = do_HEAD  # noqa: N815


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
    with serve(FakeAnthropic(), AnthropicHandler) as fake:
        yield fake
