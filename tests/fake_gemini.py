"""A fake Gemini API on 127.0.0.1, as Gemini CLI uses it with an API key and
``GOOGLE_GEMINI_BASE_URL``.

Gemini CLI POSTs ``/v1beta/models/{model}:{method}``:
- ``streamGenerateContent?alt=sse``: the conversation. Each scripted turn answers one, in order,
  streamed as server-sent ``data:`` lines of ``GenerateContentResponse`` chunks (the text split
  over two chunks, function calls in the last; ``finishReason`` and ``usageMetadata`` last). Its
  ``check(body)`` sees what Gemini CLI sent (``contents``, with every ``functionResponse``).
- ``generateContent``: Gemini CLI's own small questions (which model to route a prompt to, who
  speaks next). Each asks for JSON fitting ``generationConfig.responseJsonSchema``, and the fake
  answers with the first value that fits (recorded in ``utility``), never from the script. One
  that asks for no JSON fails the test.
- ``countTokens``: a count.
Anything else (another path, another host through the proxy) fails the test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fake_server import Check, Handler, Script, Turn, serve


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def call(name: str, args: dict[str, Any], id: str | None = None) -> dict[str, Any]:  # noqa: A002
    """A function call part (the API may name it with an ``id``; Gemini CLI makes one if not)."""
    return {"functionCall": {"name": name, "args": args, **({"id": id} if id else {})}}


def responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``functionResponse`` Gemini CLI sent so far, in order."""
    return [part["functionResponse"] for content in body.get("contents", [])
            for part in content.get("parts", []) if isinstance(part, dict)
            and "functionResponse" in part]


def fitting(schema: dict[str, Any]) -> Any:
    """The first value that fits a (Gemini-style, upper-case types) JSON schema."""
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {name: fitting(sub) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [fitting(schema.get("items", {"type": "string"}))]
    return {"string": "simple", "integer": 1, "number": 1, "boolean": False}.get(kind)


@dataclass
class FakeGemini(Script):
    utility: list[dict[str, Any]] = field(default_factory=list)

    def reply(self, *parts: dict[str, Any], check: Check | None = None) -> FakeGemini:
        self.turns.append(Turn(200, {"parts": list(parts)}, check))
        return self

    def error(self, status: int, message: str, check: Check | None = None) -> FakeGemini:
        self.turns.append(Turn(status, {"error": {"code": status, "message": message,
                                                  "status": "INTERNAL"}}, check))
        return self

    def answer_utility(self, body: dict[str, Any]) -> dict[str, Any] | None:
        schema = (body.get("generationConfig") or {}).get("responseJsonSchema")
        if not isinstance(schema, dict):
            self.fail(f"generateContent without a JSON schema: {json.dumps(body)[:300]}")
            return None
        value = fitting(schema)
        self.utility.append(value)
        return chunk([text(json.dumps(value))], last=True)


def chunk(parts: list[dict[str, Any]], last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "fake-gemini"}
    if last:
        candidate["finishReason"] = "STOP"
        out["usageMetadata"] = {"promptTokenCount": 100, "candidatesTokenCount": 10,
                                "totalTokenCount": 110}
    return out


def sse_chunks(parts: list[dict[str, Any]]) -> Iterator[tuple[None, dict[str, Any]]]:
    texts = [p for p in parts if "text" in p]
    calls = [p for p in parts if "text" not in p]
    for p in texts:
        half = len(p["text"]) // 2
        yield None, chunk([text(p["text"][:half])], last=False)
        yield None, chunk([text(p["text"][half:])], last=not calls and p is texts[-1])
    if calls or not texts:
        yield None, chunk(calls, last=True)


class GeminiHandler(Handler):
    fake: FakeGemini

    def do_POST(self) -> None:  # noqa: N802
        if self.leaving():
            return
        body = self.body()
        path = self.path.split("?")[0]
        method = path.rsplit(":", 1)[-1] if path.startswith("/v1beta/models/") else ""
        if method == "countTokens":
            self.send_json(200, {"totalTokens": len(json.dumps(body)) // 4})
        elif method == "generateContent":
            answer = self.fake.answer_utility(body)
            self.send_json(200 if answer else 400, answer or {"error": {"message": "no schema"}})
        elif method == "streamGenerateContent":
            turn = self.fake.next_turn(body, dict(self.headers))
            if turn is None:
                self.send_json(500, {"error": {"code": 500, "message": str(self.fake.failures[-1]),
                                               "status": "INTERNAL"}})
            elif turn.status != 200:
                self.send_json(turn.status, turn.body)
            else:
                self.send_events(sse_chunks(turn.body["parts"]))
        else:
            self.unexpected()

    def do_GET(self) -> None:  # noqa: N802
        if not self.leaving():
            self.unexpected()


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    with serve(FakeGemini(), GeminiHandler) as fake:
        yield fake
