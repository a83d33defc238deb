"""The browser fixture itself: a real Chromium renders a page and saves a screenshot."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page


def test_chromium_renders_and_screenshots(page: Page, screenshot: Callable[[str], Path]) -> None:
    page.set_content("<title>probe</title><h1 id=t>gitspace</h1><p>é ✓</p>")
    assert page.title() == "probe"
    assert page.inner_text("#t") == "gitspace"
    shot = screenshot("probe")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 1000
