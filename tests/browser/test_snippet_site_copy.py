"""The snippet leaves the customer's own copy, in Chromium (issue 26).

A customer's page reads "Cold-chain monitoring you can prove". The snippet may replace a
zone only with copy that is about the visitor: the segment's or the account's own. For an
anonymous visitor, and for any zone whose rung would be the campaign default, the page keeps
its own words: not rewritten (not even with the same text), shown again once the answer has
come (the anti-flicker hiding ends without a write), and still counted (view and click
beacons), unless the campaign opts in with `snippet.replace_default: true`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis
from playwright.sync_api import Page

from tests.browser.conftest import PageWatch
from tests.browser.dom import BrowserZone, zones_in
from tests.browser.sites import ApiMode, SiteConfig, SiteZone, api_stand_in, customer_site
from tests.event_stream import stream_events as all_events
from tests.server.conftest import TENANT, link_token, make_zone_set, publish_config
from tests.server.uvicorn_thread import serve_in_thread
from tests.site_copy_campaign import (
    CTA_HREF,
    DEFAULT_COPY,
    SEGMENT,
    SEGMENT_COPY,
    SITE_COPY,
    SITE_COPY_CAMPAIGN,
    SITE_HREF,
    site_copy_campaign,
    site_copy_zone_contracts,
)
from welcomemat.zones.store import ZoneSetStore

pytestmark = pytest.mark.browser

# The most the snippet accepts: a loaded machine must not turn a slow answer into the defaults.
BUDGET_MS = 2_000
SLACK_MS = 5_000  # a deadline for reaching a state on a loaded machine, never a measured figure
PERSONAL_HEADLINE = "Congrats on the Series A, Dymaxa: ramp your new SDRs in weeks"

# Every write inside a zone element after the page was parsed, except its `style` attribute
# (the snippet's hiding): text or child nodes replaced, `href` or `data-wm-rung` set. Installed
# before any page script; its DOMContentLoaded listener runs before the snippet's.
_ZONE_WRITES_JS = """
window.__wmZoneWrites = [];
document.addEventListener('DOMContentLoaded', () => {
  new MutationObserver((records) => {
    for (const r of records) {
      const node = r.target.nodeType === 1 ? r.target : r.target.parentElement;
      const zone = node && node.closest('[data-wm-zone]');
      if (!zone || (r.type === 'attributes' && r.attributeName === 'style')) continue;
      window.__wmZoneWrites.push(zone.dataset.wmZone);
    }
  }).observe(document.documentElement,
             {subtree: true, childList: true, characterData: true, attributes: true});
}, {once: true});
"""


def site_zones() -> list[SiteZone]:
    return [
        SiteZone("z_headline", "h1", SITE_COPY["z_headline"]),
        SiteZone("z_proof", "p", SITE_COPY["z_proof"]),
        SiteZone("z_cta", "a", SITE_COPY["z_cta"], SITE_HREF),
    ]


@dataclass
class Site:
    renderer: str
    customer: str
    config: SiteConfig
    redis: redis.Redis

    def campaign(self, *, replace_default: bool | None) -> None:
        config = site_copy_campaign(replace_default=replace_default, snippet_origins=[self.customer])
        publish_config(self.redis, config, site_copy_zone_contracts())

    def personal_headline(self, account: str) -> None:
        zone_set = make_zone_set(
            account, texts={"z_headline": PERSONAL_HEADLINE}, segment=SEGMENT, campaign=SITE_COPY_CAMPAIGN
        )
        ZoneSetStore(self.redis).publish(zone_set)


@pytest.fixture
def site(redis_client: redis.Redis, renderer_url: str, watch: PageWatch) -> Iterator[Site]:
    config = SiteConfig(
        api_origin=renderer_url, campaign=SITE_COPY_CAMPAIGN, zones=site_zones(), budget_ms=BUDGET_MS
    )
    watch.page.add_init_script(_ZONE_WRITES_JS)
    with serve_in_thread(customer_site(config)) as customer:
        yield Site(renderer_url, customer, config, redis_client)


def visit(page: Page, site: Site, account: str | None) -> str:
    """Load the customer's page (with the account's link token) and wait for the snippet's verdict."""
    query = f"?wm={link_token(account, campaign=SITE_COPY_CAMPAIGN)}" if account else ""
    response = page.goto(f"{site.customer}/{query}")
    assert response is not None and response.status == 200
    page.wait_for_function(
        "() => document.documentElement.dataset.wmSnippet !== undefined", timeout=BUDGET_MS + SLACK_MS
    )
    return str(page.evaluate("() => document.documentElement.dataset.wmSnippet"))


def zone_writes(page: Page) -> list[str]:
    found: Any = page.evaluate("() => window.__wmZoneWrites")
    return list(found)


def kept(zone: BrowserZone, zone_id: str) -> bool:
    """The zone reads exactly as the site wrote it, is visible, and carries no rung of ours."""
    return zone.text == SITE_COPY[zone_id] and zone.visibility == "visible" and zone.rung is None


# -- anonymous visitors ----------------------------------------------------------------------


def test_an_anonymous_visitor_reads_the_sites_own_headline(watch: PageWatch, site: Site) -> None:
    site.campaign(replace_default=None)  # the default: the site keeps its copy
    page = watch.page
    verdict = visit(page, site, None)
    found = zones_in(page)
    assert found["z_headline"].text == "Cold-chain monitoring you can prove"
    assert verdict == "default"  # nothing written: the page's own copy stays
    assert all(kept(found[z], z) for z in SITE_COPY), found
    assert found["z_cta"].href == SITE_HREF
    assert DEFAULT_COPY["z_headline"] not in str(page.evaluate("() => document.body.innerText"))
    # Not even rewritten with the same words: nothing inside a zone was touched.
    assert zone_writes(page) == []
    assert not watch.page_errors and not watch.csp_violations


def test_kept_zones_are_hidden_while_waiting_and_shown_again_unchanged(watch: PageWatch, site: Site) -> None:
    # The API answers only once the page has painted, so the hiding is observable: the zones
    # (and only they) are hidden while the answer is awaited, then shown with the site's text.
    mode = ApiMode(hold=threading.Event())
    site.campaign(replace_default=False)
    body = httpx.get(f"{site.renderer}/snippet.js").content
    with serve_in_thread(api_stand_in(site.renderer, body, mode)) as api:
        site.config.api_origin = api
        page = watch.page
        try:
            response = page.goto(f"{site.customer}/")
            assert response is not None and response.status == 200
            page.evaluate(
                "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
            )
            assert {z.visibility for z in zones_in(page).values()} == {"hidden"}
            assert (
                page.evaluate("() => getComputedStyle(document.querySelector('.footer')).visibility")
                == "visible"
            )
        finally:
            assert mode.hold is not None
            mode.hold.set()
        page.wait_for_function(
            "() => document.documentElement.dataset.wmSnippet !== undefined", timeout=BUDGET_MS + SLACK_MS
        )
        assert mode.answered.is_set()
    assert page.evaluate("() => document.documentElement.dataset.wmSnippet") == "default"
    found = zones_in(page)
    assert all(kept(found[z], z) for z in SITE_COPY), found
    assert zone_writes(page) == []


def test_with_replace_default_an_anonymous_visitor_gets_the_default_copy(
    watch: PageWatch, site: Site
) -> None:
    site.campaign(replace_default=True)
    page = watch.page
    assert visit(page, site, None) == "swapped"
    found = zones_in(page)
    assert {z: found[z].text for z in DEFAULT_COPY} == DEFAULT_COPY
    assert {z.rung for z in found.values()} == {"default"}
    assert found["z_cta"].href == CTA_HREF


# -- identified visitors ---------------------------------------------------------------------


def test_a_personal_headline_replaces_and_a_default_proof_point_is_kept(watch: PageWatch, site: Site) -> None:
    site.campaign(replace_default=False)
    site.personal_headline("acct_dymaxa")
    page = watch.page
    assert visit(page, site, "acct_dymaxa") == "swapped"
    found = zones_in(page)
    assert (found["z_headline"].text, found["z_headline"].rung) == (PERSONAL_HEADLINE, "personal")
    # The proof point's rung would be the default (`fallback: default`): the site's own stays.
    assert kept(found["z_proof"], "z_proof"), found["z_proof"]
    # The CTA has segment copy: about the visitor's segment, so it replaces.
    assert (found["z_cta"].text, found["z_cta"].rung) == (SEGMENT_COPY["z_cta"], "segment")
    assert found["z_cta"].href == CTA_HREF
    assert sorted(set(zone_writes(page))) == ["z_cta", "z_headline"]
    assert {z.visibility for z in found.values()} == {"visible"}


def test_with_replace_default_the_proof_point_gets_the_default_copy(watch: PageWatch, site: Site) -> None:
    site.campaign(replace_default=True)
    site.personal_headline("acct_dymaxa")
    page = watch.page
    assert visit(page, site, "acct_dymaxa") == "swapped"
    found = zones_in(page)
    assert (found["z_headline"].text, found["z_headline"].rung) == (PERSONAL_HEADLINE, "personal")
    assert (found["z_proof"].text, found["z_proof"].rung) == (DEFAULT_COPY["z_proof"], "default")
    assert (found["z_cta"].text, found["z_cta"].rung) == (SEGMENT_COPY["z_cta"], "segment")


# -- a kept page is still counted ------------------------------------------------------------


def stream_events(client: redis.Redis, view_id: str) -> list[dict[str, str]]:
    entries = all_events(client, TENANT)
    events = [{k.decode(): v.decode() for k, v in fields.items()} for _, fields in entries]
    return [e for e in events if e.get("view_id") == view_id]


def wait_for_event(client: redis.Redis, view_id: str, kind: str) -> dict[str, str]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for event in stream_events(client, view_id):
            if event["type"] == kind:
                return event
        time.sleep(0.05)
    raise AssertionError(f"no {kind} event for view {view_id}: {stream_events(client, view_id)}")


def test_a_visit_that_keeps_every_zone_still_counts_its_view_and_click(
    watch: PageWatch, site: Site, redis_client: redis.Redis
) -> None:
    # An identified account with no zone set yet: every zone's rung would be the default, so
    # the page keeps all its copy; the visit must still reach the stream, or the lift report's
    # reached-only view would lose exactly these visitors.
    site.campaign(replace_default=False)
    page = watch.page
    page.route(f"{SITE_HREF}**", lambda route: route.fulfill(body="<p>landed</p>"))
    with page.expect_response(lambda r: "/v1/zones" in r.url) as zones_answer:
        assert visit(page, site, "acct_nozoneset") == "default"
    answer = zones_answer.value.json()
    assert answer["zones"] == {}
    found = zones_in(page)
    assert all(kept(found[z], z) for z in SITE_COPY), found
    view = wait_for_event(redis_client, answer["view_id"], "view")
    assert (view["campaign"], view["arm"], view["account"]) == (
        SITE_COPY_CAMPAIGN,
        "personal",
        "acct_nozoneset",
    )
    with page.expect_navigation():
        page.click("[data-wm-zone=z_cta]")
    assert page.url == SITE_HREF  # the site's own link, untouched
    click = wait_for_event(redis_client, answer["view_id"], "click")
    assert click["zone"] == "z_cta"
