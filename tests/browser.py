"""A real headless Chromium for the web view's end-to-end tests, launched once per test session.

The browser is Debian's ``chromium`` (``.ci/run`` installs it when it is missing), driven by
Playwright for Python with its path given: Playwright's own browser download cannot work on these
machines. A missing browser fails the tests that need it; nothing here skips.

Chromium runs with a fresh profile in the session's temporary folder and with every background
service off (update checks, sync, field trials...): this machine refuses connections beyond
loopback, and the browser must not try any. Its HOME is a temporary folder too, so it never
writes to the real one.

Screenshots a test takes are kept as artifacts in ``test-artifacts/screenshots/`` beside
``tests/`` (git-ignored); the session's closing summary names the folder.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "screenshots"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]
TIMEOUT_MS = 15_000
taken: list[Path] = []


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    """One Chromium for the whole session (starting it costs about a second)."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: the web view's browser tests need Debian's chromium. "
                    "Run 'apt-get install chromium' (.ci/run does this).", pytrace=False)
    from playwright.sync_api import sync_playwright

    home = tmp_path_factory.mktemp("browser-home")
    profile = tmp_path_factory.mktemp("browser-profile")
    with pytest.MonkeyPatch.context() as mp:
        # The Playwright driver and Chromium both inherit this; neither may touch the real HOME.
        mp.setenv("HOME", str(home))
        mp.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        mp.setenv("XDG_CACHE_HOME", str(home / ".cache"))
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                str(profile), executable_path=str(CHROMIUM), headless=True, args=ARGS,
                viewport={"width": 1280, "height": 900})
            context.set_default_timeout(TIMEOUT_MS)
            try:
                yield context
            finally:
                context.close()


@pytest.fixture
def page(browser: BrowserContext) -> Iterator[Page]:
    """A fresh tab, closed after the test."""
    tab = browser.new_page()
    try:
        yield tab
    finally:
        tab.close()


@pytest.fixture
def screenshot(page: Page, request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """``screenshot(label)`` saves the tab as test-artifacts/screenshots/<test>-<label>.png."""

    def take(label: str, *, full_page: bool = False) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{request.node.name}-{label}")
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        taken.append(path)
        return path

    return take


def summary_line() -> str | None:
    """For the terminal summary: where this session's screenshots went."""
    if not taken:
        return None
    return f"{len(taken)} browser screenshot(s) saved in {ARTIFACTS}"
