"""The Anthropic SDK's own tool runner on a gitspace workspace: each memory or file call the model
makes is one commit.

    .venv/bin/python examples/sdk_runner.py [FOLDER]     # FOLDER: a new workspace (sdk-run)

With ANTHROPIC_API_KEY set, Claude plays the model. Without it the example runs offline: the SDK
sends its requests through httpx2's MockTransport (the SDK's own door for a transport) to
``scripted``, a stand-in for the Messages API that answers as a model would: a memory write, a
file, then a sentence. Either way the SDK, its tool runner and gitspace's tools are the real ones.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anthropic
import httpx2  # the HTTP library anthropic 2 is built on

import gitspace
from gitspace.agent.sdk import memory_tool, runnable_tools

GOAL = "Remember that I take my tea without sugar, and start notes/tea.md with one line about it."


def scripted() -> anthropic.Anthropic:
    """A client whose model is a script: three replies, each checked against what the SDK sent."""
    replies: list[list[dict[str, Any]]] = [
        [{"type": "tool_use", "id": "toolu_01", "name": "memory",
          "input": {"command": "create", "path": "/memories/tea.md", "file_text": "no sugar\n"}}],
        [{"type": "tool_use", "id": "toolu_02", "name": "create",
          "input": {"path": "notes/tea.md", "file_text": "Tea: no sugar.\n"}}],
        [{"type": "text", "text": "Noted: no sugar, in memory and in notes/tea.md."}],
    ]

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent = json.loads(request.content)
        turn = (len(sent["messages"]) - 1) // 2  # the whole history every turn (thread=False)
        if turn > 0:  # the runner sent the previous call's result back, and it succeeded
            [result] = [b for b in sent["messages"][-1]["content"] if b["type"] == "tool_result"]
            assert not result.get("is_error"), result
        content = replies[turn]
        return httpx2.Response(200, json={
            "id": f"msg_{turn}", "type": "message", "role": "assistant", "model": sent["model"],
            "content": content, "stop_sequence": None,
            "stop_reason": "tool_use" if content[0]["type"] == "tool_use" else "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1}})

    return anthropic.Anthropic(api_key="offline", base_url="http://model.invalid",
                               http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))


def main(folder: str) -> None:
    live = bool(os.environ.get("ANTHROPIC_API_KEY"))
    client = anthropic.Anthropic() if live else scripted()
    print("Claude plays the model." if live else "Offline: a script plays the model.")
    with gitspace.init(folder, agent="sdk-runner") as ws:
        runner = client.beta.messages.tool_runner(
            model="claude-sonnet-4-5", max_tokens=4096,
            messages=[{"role": "user", "content": GOAL}],
            tools=[memory_tool(ws), *runnable_tools(ws)], thread=False)
        *_, last = runner  # one model reply per turn; the runner runs each reply's tool calls
        print("".join(b.text for b in last.content if b.type == "text"))
        print(ws.call("log", {"limit": 3}).text)  # the ops those calls became, newest first


if __name__ == "__main__":
    try:
        main(sys.argv[1] if len(sys.argv) > 1 else "sdk-run")
    except gitspace.GitspaceError as e:  # a folder that is taken, say: the sentence, no traceback
        sys.exit(f"{e}\n{e.hint or ''}".rstrip())
