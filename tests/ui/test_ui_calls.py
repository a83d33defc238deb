"""The web view shows the tree of calls: a real ``gitspace ui`` over a run that delegated twice
(the real SDK against the fake Messages API), read over plain HTTP."""

from __future__ import annotations

from pathlib import Path

from fake_anthropic import FakeAnthropic, text, tool_use
from ui_server import fetch, serving

import gitspace
from gitspace.agent.clients import AnthropicClient
from gitspace.agent.loop import Loop
from gitspace.agent.session import listing


def test_sessions_timeline_and_conversations_link_the_calls(ws_root: Path,
                                                            fake_api: FakeAnthropic) -> None:
    gitspace.init(ws_root, agent="boss").close()
    fake_api.reply(tool_use("toolu_p1", "delegate", {"task": "Write the chapter."}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c1", "delegate", {"task": "Write a footnote."}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_g1", "create", {"path": "note.md", "file_text": "n\n"}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_g2", "return", {"value": "note.md"}), stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c2", "return", {"value": 1}), stop_reason="tool_use")
    fake_api.reply(text("Done."))
    with gitspace.open(ws_root, agent="boss") as ws:
        top = Loop(ws, AnthropicClient(model="m", sdk_client=fake_api.client())).start("Book.")
    fake_api.done()
    by_depth = {s.depth: s.id for s in listing(ws_root)}
    assert by_depth[0] == top.session.id

    with serving(ws_root) as base:
        status, page = fetch(f"{base}/sessions")
        assert status == 200
        assert page.index(by_depth[0]) < page.index(by_depth[1]) < page.index(by_depth[2])
        assert 'class="depth-2"' in page and "↳ " in page

        status, child = fetch(f"{base}/session/{by_depth[1]}")
        assert status == 200
        assert f'href="/session/{by_depth[0]}#toolu_p1"' in child  # who called it, where
        assert f'href="/session/{by_depth[2]}"' in child  # its own call, to the callee
        assert "Returned: " in child and "<code>1</code>" in child

        status, timeline = fetch(f"{base}/")
        assert status == 200
        # The grandchild's op (the child made none): under two calls, linked to the caller.
        assert f'href="/session/{by_depth[1]}#toolu_c1"' in timeline
        assert "called depth-2" in timeline
