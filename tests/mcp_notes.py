"""A stdio MCP server of one tool, ``write_note(name, text)``, which writes a file in its working
folder: what an MCP tool that changes files looks like to a harness (tests/harness/test_codex_cli.py).

Newline-delimited JSON-RPC on stdin/stdout, as MCP's stdio transport is; only what a client asks
first (initialize, tools/list) and tools/call are answered; ``text`` "fail" makes the call an
``isError`` result after writing (Codex then sends no PostToolUse for it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

TOOL = {"name": "write_note", "description": "Write a note file.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"},
                                                         "text": {"type": "string"}},
                        "required": ["name", "text"]}}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}}, "serverInfo": {"name": "notes", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        args = params["arguments"]
        Path(args["name"]).write_text(args["text"])
        result = {"content": [{"type": "text", "text": "written"}],
                  "isError": args["text"] == "fail"}
    else:
        result = {}
    return None if "id" not in message else {"jsonrpc": "2.0", "id": message["id"],
                                             "result": result}


if __name__ == "__main__":
    for line in sys.stdin:
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
