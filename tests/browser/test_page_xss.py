"""Every string of ../shared/corpora/xss/ on the server-rendered page, in Chromium: literal text, no script.

Each payload is a zone's text (eight a page: headline and title, paragraphs, a link
zone), bare and inside a sentence that names the account the way a personal headline
does. Chromium loads the page and we check what a visitor's browser did: no dialog, no
element or attribute beyond the template's own (the same page with harmless text is the
reference), each zone's `textContent` is the payload, no CSP violation, no page error,
and no request to any origin but the renderer's.

The page is loaded as served (with its CSP) and again with the CSP header removed, so
escaping alone is shown to keep every payload inert: the policy is a second wall, not
the one that holds.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
import redis
from playwright.sync_api import Route

from tests.browser.campaigns import (
    CTA_HREF,
    XSS_CAMPAIGN,
    batches,
    in_account_name,
    xss_campaign_config,
    xss_payloads,
    xss_zone_contracts,
    xss_zone_ids,
)
from tests.browser.conftest import PageWatch
from tests.browser.dom import element_skeleton, expected_text, zones_in
from tests.server.conftest import link_token, make_zone_set, publish_config
from welcomemat.zones.store import ZoneSetStore

pytestmark = pytest.mark.browser

PAYLOADS = xss_payloads()


def cta_destination(renderer_url: str, href: str | None) -> str | None:
    """Where the page's CTA takes the visitor: its click redirect's `Location`."""
    assert href is not None and href.startswith("/r/"), href
    response = httpx.get(renderer_url + href, headers={"user-agent": "Mozilla/5.0"}, follow_redirects=False)
    assert response.status_code == 303, response.text
    return response.headers["location"]


def bare(payload: str) -> str:
    return payload


def strip_csp(route: Route) -> None:
    response = route.fetch()
    headers = {k: v for k, v in response.headers.items() if k.lower() != "content-security-policy"}
    route.fulfill(response=response, headers=headers)


@pytest.mark.parametrize(
    ("policy", "shape"),
    [("served", bare), ("stripped", bare), ("served", in_account_name)],
    ids=["zone-text", "zone-text-without-csp", "account-name"],
)
def test_xss_corpus_renders_as_literal_text_in_chromium(
    policy: str,
    shape: Callable[[str], str],
    watch: PageWatch,
    renderer_url: str,
    redis_client: redis.Redis,
) -> None:
    publish_config(redis_client, xss_campaign_config(), xss_zone_contracts())
    store = ZoneSetStore(redis_client)
    page = watch.page
    if policy == "stripped":
        page.route(f"{renderer_url}/c/**", strip_csp)
    ids = xss_zone_ids()

    def load(account: str, texts: dict[str, str]) -> None:
        store.publish(
            make_zone_set(
                account, texts=texts, hrefs={"z_cta": CTA_HREF}, segment="s0", campaign=XSS_CAMPAIGN
            )
        )
        token = link_token(account, campaign=XSS_CAMPAIGN)
        response = page.goto(f"{renderer_url}/c/{XSS_CAMPAIGN}?wm={token}")
        assert response is not None and response.status == 200
        if policy == "stripped":
            assert "content-security-policy" not in response.headers
        watch.settle()

    load("acct_harmless", {zone_id: f"Harmless text for {zone_id}" for zone_id in ids})
    reference = element_skeleton(page)
    assert reference.count("p[class,data-wm-rung,data-wm-zone]") == len(ids) - 2

    for n, group in enumerate(batches(PAYLOADS)):
        watch.clear()
        texts = {zone_id: shape(payload) for zone_id, payload in zip(ids, group, strict=False)}
        load(f"acct_xss_{n}", texts)
        where = f"batch {n}: {group!r}"
        assert not watch.dialogs, f"{where}: dialog {watch.dialogs}"
        assert element_skeleton(page) == reference, f"{where}: the DOM has elements or attributes of its own"
        found = zones_in(page)
        for zone_id, text in texts.items():
            assert found[zone_id].rung == "personal", where
            assert found[zone_id].text == expected_text(text), f"{where}: zone {zone_id}"
        assert cta_destination(renderer_url, found["z_cta"].href) == CTA_HREF, where
        assert page.evaluate("() => document.querySelector('title').textContent") == expected_text(
            texts["z_headline"]
        )
        assert not watch.page_errors, f"{where}: {watch.page_errors}"
        assert not watch.csp_violations, f"{where}: {watch.csp_violations}"
        strangers = [url for url in watch.requests if not url.startswith(f"{renderer_url}/")]
        assert not strangers, f"{where}: requests to other origins {strangers}"
