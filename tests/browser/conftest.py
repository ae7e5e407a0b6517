"""Browser fixtures: one headless Chromium for this folder, a fresh context and watched page per test.

The watched page records what a user would notice and what an attack would cause: any
`dialog` (alert/confirm/prompt: it is dismissed and fails the test), console errors,
uncaught page errors, Content-Security-Policy violations (a `securitypolicyviolation`
listener installed before any page script) and every request the page makes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page, Request, sync_playwright

from server.app import create_app
from server.tuning import RendererTuning
from tests.browser.chromium import CHROMIUM, CHROMIUM_ARGS, MISSING_MESSAGE
from tests.server.conftest import renderer_settings
from tests.server.uvicorn_thread import serve_in_thread

# Runs in every document before its own scripts (DevTools init scripts are not subject to
# the page's CSP). The binding is looked up at event time: it is installed alongside.
_CSP_LISTENER = """
document.addEventListener('securitypolicyviolation', (e) => {
  window.__wmCspViolation({
    directive: e.effectiveDirective, blocked: e.blockedURI, source: e.sourceFile,
    sample: e.sample, document: e.documentURI,
  });
}, true);
"""


@dataclass
class PageWatch:
    """A page and everything it did that a test may assert on."""

    page: Page
    dialogs: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    csp_violations: list[dict[str, Any]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def settle(self) -> None:
        """One round trip to the page: events it emitted before now have been received."""
        self.page.evaluate("() => 0")

    def clear(self) -> None:
        for found in (self.dialogs, self.console_errors, self.page_errors, self.csp_violations):
            found.clear()
        self.requests.clear()


# One browser for all the tests of this folder (they run one after another; under `-n 2`, one
# per worker, started again when a worker comes back to this folder). Not for the whole
# session: while Playwright's sync API is active, its event loop counts as running in this
# thread, and other tests' `asyncio.run()` would refuse to start.
@pytest.fixture(scope="package")
def chromium() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(MISSING_MESSAGE, pytrace=False)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def watch(chromium: Browser) -> Iterator[PageWatch]:
    context = chromium.new_context()
    page = context.new_page()
    watched = PageWatch(page)

    def on_dialog(dialog: Dialog) -> None:
        watched.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            watched.console_errors.append(message.text)

    def on_request(request: Request) -> None:
        watched.requests.append(request.url)

    page.on("dialog", on_dialog)
    page.on("console", on_console)
    page.on("pageerror", lambda error: watched.page_errors.append(str(error)))
    page.on("request", on_request)

    def on_csp_violation(violation: dict[str, Any]) -> None:
        watched.csp_violations.append(violation)

    page.expose_function("__wmCspViolation", on_csp_violation)
    page.add_init_script(_CSP_LISTENER)
    try:
        yield watched
        assert not watched.dialogs, f"a page opened a dialog: {watched.dialogs}"
    finally:
        context.close()


def browser_settings() -> Any:
    """Renderer settings for pages a browser loads from 127.0.0.1 or localhost."""
    return renderer_settings(allowed_hosts=("127.0.0.1", "localhost"), public_url="http://127.0.0.1:8000")


@pytest.fixture
def renderer_url(redis_client: redis.Redis) -> Iterator[str]:
    """The renderer on a real socket (`http://127.0.0.1:<port>`), reading the test's Redis.

    Redis gets 5 s, not the production 250 ms: on a busy two-core CI machine a read can
    take longer, and the fallback that follows (correct behaviour, tested in tests/server/)
    would fail a test that is about something else.
    """
    tuning = RendererTuning(watcher_poll_s=0.05, redis_timeout_s=5.0)
    app = create_app(browser_settings(), redis_client=redis_client, tuning=tuning)
    with serve_in_thread(app) as url:
        yield url
