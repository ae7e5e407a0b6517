"""Reading a page's DOM in Chromium for assertions: zone elements and the element skeleton."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from playwright.sync_api import Page

__all__ = ["BrowserZone", "element_skeleton", "expected_text", "zones_in"]

_ZONES_JS = """
() => Array.from(document.querySelectorAll('[data-wm-zone]'), (e) => ({
  zone: e.dataset.wmZone, rung: e.dataset.wmRung ?? null, tag: e.localName, text: e.textContent,
  href: e.getAttribute('href'), visibility: getComputedStyle(e).visibility,
}))
"""

# Every element in document order with its attribute names: an injected element or
# attribute (an `on*` handler, a `style`) changes it; zone text and attribute values do not.
_SKELETON_JS = """
() => Array.from(document.querySelectorAll('*'),
  (e) => `${e.localName}[${e.getAttributeNames().sort().join(',')}]`)
"""


@dataclass(frozen=True)
class BrowserZone:
    zone: str
    rung: str | None
    tag: str
    text: str
    href: str | None
    visibility: str


def zones_in(page: Page) -> dict[str, BrowserZone]:
    found: dict[str, BrowserZone] = {}
    for item in page.evaluate(_ZONES_JS):
        zone = BrowserZone(**item)
        assert zone.zone not in found, f"zone {zone.zone} appears twice"
        found[zone.zone] = zone
    return found


def element_skeleton(page: Page) -> list[str]:
    skeleton: Any = page.evaluate(_SKELETON_JS)
    return list(skeleton)


def expected_text(payload: str) -> str:
    """What an HTML parser makes of any text: CR/CRLF become LF, NUL becomes U+FFFD."""
    return payload.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")
