"""Reading rendered pages the way a browser does (html5lib), for assertions."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

import html5lib


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
