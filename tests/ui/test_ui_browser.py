"""The web view end to end in a real headless Chromium, on the workspace the offline demo makes.

The demo runs once for this module (two agents through the real loop: the maze and the journal),
and one ``gitspace ui`` serves it; each test drives the browser the way a person would: read the
timeline, follow links, open a session, watch a new op arrive. Screenshots land in
test-artifacts/screenshots/.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import git
from playwright.sync_api import Page, expect
from ui_server import serving

import gitspace
from gitspace.agent.demo import run_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """(workspace, view URL): the offline demo's workspace and a view of it."""
    home = tmp_path_factory.mktemp("demo-home")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in (("HOME", str(home)), ("XDG_CONFIG_HOME", str(home / ".config")),
                            ("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_CONFIG_NOSYSTEM", "1"),
                            ("GITSPACE_PACK_THRESHOLD", "0")):
            mp.setenv(name, value)
        root = tmp_path_factory.mktemp("demo") / "ws"
        run_demo(root, lambda line: None)
        with serving(root) as base:
            yield root, base


def test_timeline_counts_every_commit_git_has(page: Page, demo: tuple[Path, str],
                                              screenshot: Callable[..., Path]) -> None:
    root, base = demo
    page.goto(base + "/")
    total = int(page.get_attribute("#total", "data-total") or -1)
    assert total == int(git(root, "rev-list", "--count", "--first-parent", "HEAD"))
    rows = page.locator("table.timeline tbody tr")
    assert rows.count() == min(total, 50)
    assert rows.first.get_attribute("id") == "c-" + git(root, "rev-parse", "HEAD").strip()
    screenshot("timeline")
    page.click("text=older ›")
    expect(page.locator("table.timeline tbody tr")).to_have_count(total - 50)


def test_a_restore_links_back_to_the_checkpoint_it_restored(page: Page, demo: tuple[Path, str],
                                                             screenshot: Callable[..., Path]) -> None:
    root, base = demo
    page.goto(base + "/?tool=restore")
    assert page.get_attribute("#total", "data-total") == "4"  # the maze's four dead ends
    page.click("text=↩ back to checkpoint junction-4")
    junction = git(root, "rev-parse", "gitspace/junction-4^{commit}").strip()
    expect(page).to_have_url(f"{base}/op/{junction}")
    expect(page.locator("table.facts")).to_contain_text("⚑ junction-4")
    # The graph reads at a glance: 6 junctions, 4 dead ends, and the way out drawn bold.
    page.goto(base + "/graph")
    facts = page.locator("#graph-facts")
    assert facts.get_attribute("data-checkpoints") == "6"
    assert facts.get_attribute("data-dead-ends") == "4"
    assert facts.get_attribute("data-restores") == "4"
    assert page.locator("svg.graph path.e-restore").count() == 4
    assert page.locator("svg.graph a.is-dead-end").count() == 4
    head = git(root, "rev-parse", "HEAD").strip()
    assert "way-out" in (page.locator(f'svg.graph a.node[data-commit="{head}"]')
                         .get_attribute("class") or "")
    page.locator(f'svg.graph a.node[data-commit="{junction}"]').click()
    expect(page).to_have_url(f"{base}/op/{junction}")
    page.goto(base + "/graph")
    page.locator("svg.graph").scroll_into_view_if_needed()
    screenshot("graph", full_page=True)


def test_an_op_shows_its_diff_unified_and_side_by_side(page: Page, demo: tuple[Path, str],
                                                       screenshot: Callable[..., Path]) -> None:
    root, base = demo
    page.goto(base + "/?tool=create&path=summaries/index.md")
    page.locator("table.timeline td.time a").first.click()
    expect(page.locator("h1")).to_contain_text("create summaries/index.md")
    expect(page.locator("table.trailers")).to_contain_text("Gitspace-Tool-Use-Id")
    added = page.locator("table.diff tr.add")
    expect(added.first).to_contain_text("# Journal synthesis")
    assert added.count() == len(git(root, "show", "HEAD:summaries/index.md").splitlines())
    assert page.locator("table.diff span.hl span").count() > 0  # highlighted on the server
    screenshot("op")
    page.click("text=side by side")
    expect(page.locator("table.diff.split td.add").first).to_contain_text("# Journal synthesis")


def test_a_session_tool_call_jumps_to_its_op_and_back(page: Page, demo: tuple[Path, str],
                                                      screenshot: Callable[..., Path]) -> None:
    root, base = demo
    page.goto(base + "/sessions")
    # The journal-reader's own session (its delegated children are journal-readers too).
    page.locator("table.sessions tr", has_text="journal-reader").filter(
        has_text="chunk by chunk").locator("a").first.click()
    expect(page.locator(".msg.compaction")).to_have_count(1)  # where the conversation was folded
    call = page.locator(".tool-use", has=page.locator("a.to-op")).first
    use_id = call.get_attribute("id")
    assert use_id and use_id.startswith("toolu_")
    screenshot("session")
    call.locator("a.to-op").click()
    expect(page.locator("table.trailers")).to_contain_text(use_id)
    page.click("a.to-session")
    page.wait_for_url(f"**/session/*#{use_id}")
    expect(page.locator(":target")).to_have_attribute("id", use_id)  # the call, highlighted


def test_a_new_op_appears_live_without_a_reload(page: Page, demo: tuple[Path, str],
                                                screenshot: Callable[..., Path]) -> None:
    root, base = demo
    page.goto(base + "/")
    expect(page.locator("#live-dot.on")).to_have_count(1)  # the event stream is connected
    before = int(page.get_attribute("#total", "data-total") or 0)
    page.evaluate("window.__stillTheSamePage = true")
    with gitspace.open(root, agent="live-tester") as ws:
        result = ws.call("create", {"path": "notes/live.md", "file_text": "seen live\n"})
    assert result.ok and result.commit
    expect(page.locator(f"#c-{result.commit}")).to_be_visible(timeout=10_000)
    assert page.get_attribute("#total", "data-total") == str(before + 1)
    assert page.evaluate("window.__stillTheSamePage") is True  # updated in place
    expect(page.locator(f"#c-{result.commit}")).to_contain_text("live-tester")
    screenshot("live")


FIRST_SCREEN = {"width": 1400, "height": 900}


def on_first_screen(page: Page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["y"] + min(box["height"], 20) <= FIRST_SCREEN["height"]


def test_every_page_as_a_first_time_reader_sees_it(page: Page, demo: tuple[Path, str],
                                                   screenshot: Callable[..., Path]) -> None:
    """Each page at 1400×900, screenshotted: what it must show on its first screen."""
    root, base = demo
    page.set_viewport_size(FIRST_SCREEN)
    head = git(root, "rev-parse", "HEAD").strip()
    page.goto(base + "/")
    # Every column says what it is; names and ids stay on one line.
    assert "" not in [th.strip() for th in page.locator("table.timeline th").all_inner_texts()]
    for cell in ("td.who", "td.op", "td.session", "td.tool"):
        assert page.eval_on_selector(f"table.timeline {cell}",
                                     "e => getComputedStyle(e).whiteSpace") == "nowrap", cell
    session = page.locator("table.timeline td.session a").first  # a session's one short form
    shown = session.inner_text()
    assert re.fullmatch(r"s-[0-9A-Z]{8}", shown) and session.get_attribute("title", timeout=1000)
    screenshot("first-timeline")
    # The op page: the diff starts on the first screen, a created file's text is shown once.
    page.goto(base + "/?tool=create&path=summaries/index.md")
    page.locator("table.timeline td.op a").first.click()
    assert on_first_screen(page, "table.diff tr.add")
    visible = page.get_by_text("# Journal synthesis", exact=False).filter(visible=True)
    assert visible.count() == 1  # the diff's line; the args and the trailers are folded
    expect(page.locator("details.trailers")).not_to_have_attribute("open", "")
    screenshot("first-op")
    # The graph: the maze's dead ends on the first screen, the journal's run folded to one row.
    page.goto(base + "/graph")
    assert on_first_screen(page, "svg.graph a.is-dead-end")
    fold = page.locator("svg.graph a.fold")
    expect(fold).to_have_count(1)
    expect(fold).to_contain_text("more commits")
    screenshot("first-graph")
    fold.click()
    total = int(git(root, "rev-list", "--count", "--all").strip())
    expect(page.locator("svg.graph a.node")).to_have_count(total)
    # Sessions and one session: a checkpoint call says what it did, never "no op".
    page.goto(base + "/sessions")
    assert on_first_screen(page, "table.sessions tr:has-text('maze-runner')")  # past 23 children
    expect(page.locator("table.sessions tr.folded")).to_contain_text("20 more delegated sessions")
    screenshot("first-sessions")
    page.locator("table.sessions tr", has_text="maze-runner").locator("a").first.click()
    checkpoint = page.locator(".tool-use", has=page.locator("code", has_text="checkpoint")).first
    expect(checkpoint).to_contain_text("a ref moved (a checkpoint is a tag)")
    expect(page.locator(".tool-use", has_text="read-only, unchanged or refused")).to_have_count(0)
    screenshot("first-session")
    # Files: icons drawn, no emoji that needs a font; a file and its blame.
    page.goto(base + "/files")
    rows = page.locator("table.tree tr")
    expect(page.locator("table.tree svg.icon")).to_have_count(rows.count())
    assert not any(ch in page.inner_text("main") for ch in "📁📄")
    screenshot("first-files")
    page.goto(base + f"/files/{head}/maze/position.json?blame=1")
    expect(page.locator("a.blame-op").first).to_contain_text("maze-runner")
    screenshot("first-blame")
    # Compare: two pickers of checkpoints, branches and recent ops.
    page.goto(base + "/compare")
    page.select_option("select[name=a]", "junction-1")
    page.select_option("select[name=b]", "main")
    page.click("form.filters button")
    expect(page.locator("#compare-summary")).to_contain_text("from junction-1 to main")
    assert page.locator("select[name=a] optgroup").count() == 3
    screenshot("first-compare")


def test_a_checkout_recorded_in_place_names_its_sessions_ops_and_turns_one_way(
        page: Page, tmp_path: Path, screenshot: Callable[..., Path]) -> None:
    """Claude Code's sessions in a person's own checkout: each session by its short form (``s-``
    and the first 8 of its UUID) on every page, an op by its 8 characters, turns by session and
    number, a failed call marked failed; the sessions list shows each session's first prompt."""
    from user_repo import ONE, claude_code_checkout

    own = claude_code_checkout(tmp_path)
    page.set_viewport_size(FIRST_SCREEN)
    with serving(own) as base:
        page.goto(base + "/")
        sessions = page.locator("table.timeline td.session a").all_inner_texts()
        assert set(sessions) == {"s-3d7682ec", "s-84836b81"}, sessions
        assert all(re.fullmatch(r"[0-9A-Z]{8}|[0-9a-f]{12}", t.split()[0])
                   for t in page.locator("table.timeline td.op a.sha").all_inner_texts())
        expect(page.locator("table.timeline .b-failed")).to_have_count(1)
        screenshot("in-place-timeline")
        page.goto(base + "/sessions")
        expect(page.locator("main")).to_contain_text("Write the plan")
        expect(page.locator("main")).not_to_contain_text("the harness's own transcript")
        expect(page.locator("main")).not_to_contain_text(ONE)  # (its short form, the id a title)
        screenshot("in-place-sessions")
        page.goto(base + "/graph")
        expect(page.locator("#graph-facts")).to_contain_text("3 turn marks")
        expect(page.locator("svg.graph")).to_contain_text("s-3d7682ec turn 2")
        screenshot("in-place-graph", full_page=True)
        page.goto(base + "/")
        page.locator("table.timeline tr", has_text="Bash").locator("td.op a.sha").first.click()
        expect(page.locator("table.facts")).to_contain_text("s-3d7682ec (the conversation)")
        expect(page.locator("table.facts")).to_contain_text("Exit code 1")
        screenshot("in-place-op")
