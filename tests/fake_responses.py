"""A fake OpenAI Responses API on 127.0.0.1, as Codex CLI uses it through a custom provider.

Codex (``wire_api = "responses"``) POSTs ``{base_url}/responses`` with ``"stream": true`` and reads
server-sent events: ``response.created``, then per output item ``response.output_item.added`` and
``response.output_item.done``, and ``response.completed`` carrying the usage (a stream that ends
without it is an error to Codex). Output items are what the model says: ``message`` (text),
``function_call`` (Codex's shell is the function ``exec_command`` with ``{"cmd": ...}``) and
``custom_tool_call`` (``apply_patch``, a freeform tool whose input is the patch itself).

Each scripted turn answers one request, in order; its ``check(body)`` sees what Codex sent (the
``input`` items, with the ``function_call_output`` of every call so far). Turns scripted with
``session=ID`` answer only requests whose ``session-id`` header is ``ID`` (Codex's thread id).
Anything else (another path, another host through the proxy) fails the test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fake_server import Check, Handler, Script, Turn, serve

SESSION_HEADER = "session-id"


def message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def shell(call_id: str, cmd: str) -> dict[str, Any]:
    """Codex's shell tool (``exec_command``) running ``cmd``."""
    return {"type": "function_call", "call_id": call_id, "name": "exec_command",
            "arguments": json.dumps({"cmd": cmd})}


def patch(call_id: str, body: str) -> dict[str, Any]:
    """Codex's ``apply_patch`` with ``body`` (``*** Begin Patch`` ... ``*** End Patch``)."""
    return {"type": "custom_tool_call", "call_id": call_id, "name": "apply_patch", "input": body,
            "status": "completed"}


def outputs(body: dict[str, Any]) -> dict[str, str]:
    """Every call's output Codex sent back so far, by call id."""
    return {item["call_id"]: item.get("output", "") for item in body.get("input", [])
            if isinstance(item, dict) and item.get("type") in ("function_call_output",
                                                               "custom_tool_call_output")}


@dataclass
class FakeResponses(Script):
    def reply(self, *items: dict[str, Any], check: Check | None = None,
              session: str | None = None) -> FakeResponses:
        queue = self.queue(session)
        n = len(self.requests) + len(queue) + 1
        numbered = [{"id": f"item_{n}_{i}", **item} for i, item in enumerate(items)]
        queue.append(Turn(200, {"id": f"resp_fake_{n}", "output": numbered}, check))
        return self

    def error(self, status: int, message: str, check: Check | None = None) -> FakeResponses:
        self.turns.append(Turn(status, {"error": {"message": message, "type": "server_error"}},
                               check))
        return self


def sse_events(response: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The events the Responses API streams for ``response``, in order."""
    created = {"id": response["id"], "object": "response", "status": "in_progress", "output": []}
    yield "response.created", {"type": "response.created", "response": created}
    for i, item in enumerate(response["output"]):
        yield "response.output_item.added", {"type": "response.output_item.added",
                                             "output_index": i, "item": item}
        yield "response.output_item.done", {"type": "response.output_item.done",
                                            "output_index": i, "item": item}
    usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 110}
    yield "response.completed", {"type": "response.completed",
                                 "response": {**created, "status": "completed",
                                              "output": response["output"], "usage": usage}}


class ResponsesHandler(Handler):
    fake: FakeResponses

    def do_POST(self) -> None:  # noqa: N802
        if self.leaving():
            return
        body = self.body()
        if self.path.split("?")[0] != "/v1/responses":
            self.unexpected()
            return
        headers = dict(self.headers)
        session = {k.lower(): v for k, v in headers.items()}.get(SESSION_HEADER)
        turn = self.fake.next_turn(body, headers, session)
        if turn is None:
            self.send_json(500, {"error": {"message": str(self.fake.failures[-1])}})
        elif turn.status != 200:
            self.send_json(turn.status, turn.body)
        else:
            self.send_events(sse_events(turn.body))

    def do_GET(self) -> None:  # noqa: N802
        if not self.leaving():
            self.unexpected()


@pytest.fixture
def fake_responses() -> Iterator[FakeResponses]:
    with serve(FakeResponses(), ResponsesHandler) as fake:
        yield fake
