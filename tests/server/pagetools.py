"""Reading rendered pages the way a browser does (html5lib), for assertions."""

from __future__ import annotations

import base64
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import html5lib
import httpx


@dataclass(frozen=True)
class ZoneElement:
    zone: str
    rung: str
    tag: str
    text: str
    href: str | None


def parse(html: str) -> ET.Element:
    return html5lib.parse(html, treebuilder="etree", namespaceHTMLElements=False)  # type: ignore[no-any-return]


def text_of(element: ET.Element) -> str:
    return "".join(element.itertext())


def zones(html: str) -> dict[str, ZoneElement]:
    found: dict[str, ZoneElement] = {}
    for element in parse(html).iter():
        zone = element.get("data-wm-zone")
        if zone is not None:
            assert zone not in found, f"zone {zone} rendered twice"
            found[zone] = ZoneElement(
                zone, element.get("data-wm-rung", ""), element.tag, text_of(element), element.get("href")
            )
    return found


def body_data(html: str) -> dict[str, str]:
    body = parse(html).find("body")
    assert body is not None
    return {k: v for k, v in body.attrib.items() if k.startswith("data-")}


def cta_destination(client: httpx.Client, href: str | None) -> str | None:
    """Where a CTA link takes the visitor: its own URL, or where the click redirect (`/r/...`) sends it."""
    if href is None or not href.startswith("/r/"):
        return href
    response = client.get(href, follow_redirects=False)
    assert response.status_code == 303, response.text
    return response.headers["location"]


_PER_REQUEST = re.compile(r'(nonce="|data-wm-view=")[^"]*"')
_CLICK_LINK = re.compile(r"/r/([A-Za-z0-9_.-]+)")


def without_per_request_values(html: str) -> str:
    """A page as two answers to the same visitor share it: the nonce and view id differ per
    request, and so does a CTA's click token (its view id and times), compared by what else it says."""
    html = _PER_REQUEST.sub(r"\1…", html)
    return _CLICK_LINK.sub(lambda m: "/r/" + _click_claims(m.group(1)), html)


def _click_claims(token: str) -> str:
    """What a click token says besides its view id and times (read, not verified: the tests'
    clocks are their own; the redirect's tests verify tokens)."""
    body = token.rpartition(".")[0]
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return repr(sorted((k, v) for k, v in payload.items() if k not in ("w", "i", "e")))
