"""Debian's Chromium, headless, driven by Playwright's Python client.

Why Playwright: it drives a Chromium it did not download (`executable_path`) over the
DevTools protocol and gives, in one client, what these tests watch for: `dialog` events,
console messages, page errors, every request and response (headers included), request
interception (serving the real snippet bytes from a port where nothing listens, stripping
a header) and evaluation in the page regardless of its CSP. It works with Debian's
Chromium 15x as packaged. Selenium with chromium-driver would need a second package
pinned to the browser's version and still lacks response headers; raw CDP would mean
writing that client here. `playwright install` (a browser download) is never run: the
browser is Debian's, installed by `scripts/install-test-deps.sh`.

When Chromium is missing the browser tests fail with a message naming the install script
(they are part of the suite CI runs, so they must never skip silently); a developer
without it runs the rest with `-m "not browser"`.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "MISSING_MESSAGE"]

CHROMIUM = Path("/usr/bin/chromium")

# Headless, no sandbox (CI runs as root), and nothing that talks to the network on its own:
# the machine's network is closed to everything but the test servers on 127.0.0.1.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

MISSING_MESSAGE = (
    f"Chromium not found at {CHROMIUM}: the browser tests drive Debian's chromium package. "
    "Install it with `sh scripts/install-test-deps.sh` (apt-get; sudo when not root), "
    'or run the other tests with `-m "not browser"`.'
)
