"""`RenderedPage.finish`: every placeholder of a cached page filled in, and nothing else changed."""

from __future__ import annotations

import markupsafe
from hypothesis import given
from hypothesis import strategies as st

from server.render import RenderedPage

NONCE_SLOT, VIEW_SLOT = "wmnonce0123456789abcdef", "wmview0123456789abcdef"
CLICK = "/r/wmclick0123456789abcdef"
CLICKS = (
    (f"{CLICK}x0z", "hero", "book", "https://www.example/book?a=1&b=2"),
    (f"{CLICK}x1z", "proof", "read", "https://www.example/case-study"),
)
SLOTS = (NONCE_SLOT, VIEW_SLOT, *(c[0] for c in CLICKS))


def replaced(html: str, nonce: str, view_id: str, links: dict[str, str | None]) -> str:
    """What a page should read: each placeholder replaced in turn, everywhere it occurs."""
    html = html.replace(NONCE_SLOT, nonce).replace(VIEW_SLOT, view_id)
    for slot, zone_id, _, href in CLICKS:
        link = links.get(zone_id)
        html = html.replace(slot, link if link is not None else str(markupsafe.escape(href)))
    return html


def page(html: str) -> RenderedPage:
    return RenderedPage(html, "personal", (), 3, NONCE_SLOT, VIEW_SLOT, clicks=CLICKS)


# Page text around the placeholders: markup, and look-alikes of their prefixes.
_text = st.text(alphabet=st.sampled_from(list('<a href="/r/wmclick0x1z">wmnonce wmview é\n')), max_size=40)


@given(st.lists(st.tuples(_text, st.sampled_from(SLOTS)), max_size=12), _text, st.booleans())
def test_finish_fills_every_placeholder_and_keeps_the_rest(
    parts: list[tuple[str, str]], tail: str, linked: bool
) -> None:
    html = "".join(text + slot for text, slot in parts) + tail
    links = {"hero": "/r/click-token-hero", "proof": None} if linked else {}
    finished = page(html).finish("n0nce", "v1ew", [links.get(c[1]) for c in CLICKS] if linked else ())
    assert finished == replaced(html, "n0nce", "v1ew", links)
    assert not any(slot in finished for slot in SLOTS)


def test_a_cta_without_a_click_link_gets_its_own_href_escaped() -> None:
    html = f'<style nonce="{NONCE_SLOT}"></style><a href="{CLICKS[0][0]}">Book</a><i>{VIEW_SLOT}</i>'
    assert page(html).finish("n", "v") == (
        '<style nonce="n"></style><a href="https://www.example/book?a=1&amp;b=2">Book</a><i>v</i>'
    )


def test_each_cta_gets_its_own_link_wherever_it_occurs() -> None:
    html = f"{CLICKS[0][0]} {CLICKS[1][0]} {CLICKS[0][0]}"
    assert page(html).finish("n", "v", ["/r/hero", "/r/proof"]) == "/r/hero /r/proof /r/hero"
    assert page(html).finish("n", "v", [None, "/r/proof"]) == (
        "https://www.example/book?a=1&amp;b=2 /r/proof https://www.example/book?a=1&amp;b=2"
    )
