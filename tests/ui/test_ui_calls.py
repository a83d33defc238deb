"""The web view shows the tree of calls: a real ``gitspace ui`` over a run that delegated twice
(the real SDK against the fake Messages API), read over plain HTTP."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fake_anthropic import FakeAnthropic, text, tool_use
from playwright.sync_api import Page, expect
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


def test_a_fork_and_its_original_are_shown_side_by_side(page: Page,
                                                        screenshot: Callable[..., Path],
                                                        ws_root: Path,
                                                        fake_api: FakeAnthropic) -> None:
    from gitspace.agent import fork
    from gitspace.agent.asking import session_ops

    gitspace.init(ws_root, agent="boss").close()
    fake_api.reply(tool_use("toolu_1", "create", {"path": "plan.md", "file_text": "v1\n"}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_2", "create", {"path": "east.md", "file_text": "east\n"}),
                   stop_reason="tool_use")
    fake_api.reply(text("Went east."))
    fake_api.reply(tool_use("toolu_3", "create", {"path": "west.md", "file_text": "west\n"}),
                   stop_reason="tool_use")
    fake_api.reply(text("Went west."))
    with gitspace.open(ws_root, agent="boss") as ws:
        client = AnthropicClient(model="m", sdk_client=fake_api.client())
        first = Loop(ws, client).start("Pick a way.")
        [plan_op] = [e for e in session_ops(ws, first.session)
                     if e.tool_use_id == "toolu_1"]
        loop = Loop(ws, client)
        session = loop.new_session("Go west instead.")
        branch = fork.prepare(ws, session, fork.point(ws, plan_op.op_id, ws.root),
                              "Go west instead.")
        loop.begin(session)
    fake_api.done()

    with serving(ws_root) as base:
        status, body = fetch(f"{base}/fork/{session.id}")
        assert status == 200, body
        columns, files = body.split("<h2>Files: ")
        original, forked = columns.split('class="side"')[1:3]
        assert "east.md" in files and "west.md" in files
        assert "east.md" in original and "west.md" not in original
        assert "west.md" in forked and "east.md" not in forked
        assert "<code>main</code>: 1 op(s) after the fork point" in original
        assert f"<code>{branch}</code>: 1 op(s) after the fork point" in forked
        assert files.startswith("2 differ between the two branches")
        status, own = fetch(f"{base}/session/{session.id}")
        assert f'href="/fork/{session.id}"' in own and "Forked from session" in own
        status, theirs = fetch(f"{base}/session/{first.session.id}")
        assert f'href="/fork/{session.id}"' in theirs
        status, other = fetch(f"{base}/fork/{first.session.id}")
        assert status == 200 and "Not a fork:" in other
        page.set_viewport_size({"width": 1400, "height": 900})  # as a first-time reader sees it
        page.goto(f"{base}/fork/{session.id}")
        expect(page.locator("h2", has_text="Files: ")).to_be_visible()
        expect(page.locator("p.muted a.sha")).to_have_text(plan_op.op_id[-8:])  # the short id
        screenshot("fork")
