"""The snippet on a customer's site (a second origin with a strict CSP), in Chromium.

The renderer serves `/snippet.js` and `/v1/zones`; the customer's page embeds the script
and holds `[data-wm-zone]` elements with default text in reserved space. These tests
load that page as a visitor would and check the contract: every XSS corpus string
arrives as literal text with no dialog and no element of its own; a bad token gets the
default copy; while the answer is awaited only the zones are hidden, and the swap moves
nothing (PerformanceObserver `layout-shift`); a slow or broken API leaves the default
content visible and the snippet says `default`; a link that fails the snippet's own check
is never set; an origin the campaign does not list gets no CORS grant and keeps its
defaults; the page's `view` and a link click reach the tenant's event stream.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis
from playwright.sync_api import Page, Route

from tests.browser.badtokens import OTHER_CAMPAIGN, OTHER_TENANT, bad_token
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
from tests.browser.dom import element_skeleton, zones_in
from tests.browser.sites import ApiMode, SiteConfig, SiteZone, api_stand_in, customer_site
from tests.event_stream import stream_events as all_events
from tests.server.conftest import TENANT, link_token, make_zone_set, publish_config
from tests.server.uvicorn_thread import serve_in_thread
from welcomemat.zones.store import ZoneSetStore

pytestmark = pytest.mark.browser

PAYLOADS = xss_payloads()
# The snippet's default budget is 800 ms; tests that expect a swap give it the most it
# accepts, so a loaded CI machine cannot turn a slow answer into a false failure. Tests
# that expect the defaults use the default budget.
SWAP_BUDGET_MS = 2_000
# How long past its budget the snippet may take to settle in these tests: generous (a
# loaded CI machine), and only a deadline for reaching a state, never a measured figure.
SLACK_MS = 5_000
DEFAULT_HREF = "https://www.acmerevenue.example/"
# Short enough to fit the reserved space (7.5em) of every zone at the page's 900px width.
FITTING_TEXT = "Congrats on the Series A, Dymaxa: new SDRs, productive in weeks. " * 2


def site_zones() -> list[SiteZone]:
    zones = []
    for zone_id in xss_zone_ids():
        if zone_id == "z_cta":
            zones.append(SiteZone(zone_id, "a", "Default call to action", DEFAULT_HREF))
        else:
            zones.append(SiteZone(zone_id, "h1" if zone_id == "z_headline" else "p", f"Default {zone_id}"))
    return zones


DEFAULTS = {zone.zone_id: zone.default_text for zone in site_zones()}


@dataclass
class Sites:
    renderer: str
    customer: str  # http://127.0.0.1:<port>, listed in the campaign's snippet_origins
    unlisted: str  # the same site as http://localhost:<port>: another origin, not listed
    config: SiteConfig
    store: ZoneSetStore


@pytest.fixture
def sites(redis_client: redis.Redis, renderer_url: str) -> Iterator[Sites]:
    config = SiteConfig(
        api_origin=renderer_url, campaign=XSS_CAMPAIGN, zones=site_zones(), budget_ms=SWAP_BUDGET_MS
    )
    with serve_in_thread(customer_site(config)) as customer:
        unlisted = customer.replace("127.0.0.1", "localhost")
        publish_config(redis_client, xss_campaign_config(snippet_origins=[customer]), xss_zone_contracts())
        yield Sites(renderer_url, customer, unlisted, config, ZoneSetStore(redis_client))


def publish(sites: Sites, account: str, texts: dict[str, str]) -> int:
    result = sites.store.publish(
        make_zone_set(account, texts=texts, hrefs={"z_cta": CTA_HREF}, segment="s0", campaign=XSS_CAMPAIGN)
    )
    return int(result.version)


def visit(page: Page, url: str, account: str | None) -> str:
    """Load the customer's page (with the account's link token) and wait for the snippet's verdict."""
    query = f"?wm={link_token(account, campaign=XSS_CAMPAIGN)}" if account else ""
    response = page.goto(f"{url}/{query}")
    assert response is not None and response.status == 200
    page.wait_for_function(
        "() => document.documentElement.dataset.wmSnippet !== undefined", timeout=SWAP_BUDGET_MS + SLACK_MS
    )
    verdict: Any = page.evaluate("() => document.documentElement.dataset.wmSnippet")
    return str(verdict)


def assert_defaults_visible(page: Page) -> None:
    found = zones_in(page)
    assert {z: found[z].text for z in DEFAULTS} == DEFAULTS
    assert {zone.visibility for zone in found.values()} == {"visible"}
    assert found["z_cta"].href == DEFAULT_HREF


def snippet_bytes(renderer: str) -> bytes:
    response = httpx.get(f"{renderer}/snippet.js")
    assert response.status_code == 200, "GET /snippet.js"
    return response.content


# -- (a) hostile text --------------------------------------------------------------------


@pytest.mark.parametrize("shape", [str, in_account_name], ids=["zone-text", "account-name"])
def test_xss_corpus_through_the_snippet_is_literal_text(
    shape: Callable[[str], str], watch: PageWatch, sites: Sites
) -> None:
    page, ids = watch.page, xss_zone_ids()
    publish(sites, "acct_harmless", {zone_id: f"Harmless text for {zone_id}" for zone_id in ids})
    assert visit(page, sites.customer, "acct_harmless") == "swapped"
    reference = element_skeleton(page)

    for n, group in enumerate(batches(PAYLOADS)):
        watch.clear()
        account = f"acct_xss_{n}"
        texts = {zone_id: shape(payload) for zone_id, payload in zip(ids, group, strict=False)}
        publish(sites, account, texts)
        where = f"batch {n}: {group!r}"
        assert visit(page, sites.customer, account) == "swapped", where
        watch.settle()
        assert not watch.dialogs, f"{where}: dialog {watch.dialogs}"
        assert element_skeleton(page) == reference, f"{where}: the DOM has elements or attributes of its own"
        found = zones_in(page)
        for zone_id, text in texts.items():
            # Written as textContent from JSON: exactly the string, no HTML parsing at all.
            assert found[zone_id].text == text, f"{where}: zone {zone_id}"
            assert found[zone_id].rung == "personal", where
            assert found[zone_id].visibility == "visible", where
        assert found["z_cta"].href == CTA_HREF, where
        assert not watch.page_errors, f"{where}: {watch.page_errors}"
        assert not watch.csp_violations, f"{where}: {watch.csp_violations}"
        allowed = (f"{sites.customer}/", f"{sites.renderer}/")
        strangers = [url for url in watch.requests if not url.startswith(allowed)]
        assert not strangers, f"{where}: requests to other origins {strangers}"


@pytest.mark.parametrize("name", ["tampered-signature", "expired", "other-tenant", "other-campaign"])
def test_a_bad_token_through_the_snippet_gets_the_default_copy(
    name: str, watch: PageWatch, sites: Sites
) -> None:
    secret = "Personal headline, only with a good token"
    publish(sites, "acct_target", {"z_headline": secret})
    for tenant, campaign in ((OTHER_TENANT, XSS_CAMPAIGN), (TENANT, OTHER_CAMPAIGN)):
        sites.store.publish(
            make_zone_set("acct_target", texts={"z_headline": secret}, tenant=tenant, campaign=campaign)
        )
    token = bad_token(name, XSS_CAMPAIGN, "acct_target")
    response = watch.page.goto(f"{sites.customer}/?wm={token}")
    assert response is not None and response.status == 200
    watch.page.wait_for_function(
        "() => document.documentElement.dataset.wmSnippet !== undefined", timeout=SWAP_BUDGET_MS + SLACK_MS
    )
    found = zones_in(watch.page)
    assert {zone.rung for zone in found.values()} <= {"default", None}, found
    assert {z: found[z].text for z in DEFAULTS} == DEFAULTS
    assert {zone.visibility for zone in found.values()} == {"visible"}
    assert secret not in watch.page.evaluate("() => document.body.innerText")


# -- (b) no layout shift -----------------------------------------------------------------

_TWO_FRAMES_JS = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
_LAYOUT_SHIFT_JS = """
async () => {
  let total = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if (!entry.hadRecentInput) total += entry.value;
  });
  observer.observe({type: 'layout-shift', buffered: true});
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  for (const entry of observer.takeRecords()) if (!entry.hadRecentInput) total += entry.value;
  observer.disconnect();
  return total;
}
"""


@pytest.fixture
def slow_api(sites: Sites) -> Iterator[tuple[str, ApiMode]]:
    """The stand-in API origin (real snippet bytes, `/v1/zones` as `mode` says); scripts may load from it."""
    mode = ApiMode()
    with serve_in_thread(api_stand_in(sites.renderer, snippet_bytes(sites.renderer), mode)) as api:
        sites.config.api_origin = api
        try:
            yield api, mode
        finally:
            if mode.hold is not None:  # let a held request finish, so the server stops at once
                mode.hold.set()


@pytest.mark.parametrize(("layout", "shifts"), [("reserved", False), ("unreserved", True)])
def test_the_swap_shifts_no_layout(
    layout: str, shifts: bool, watch: PageWatch, sites: Sites, slow_api: tuple[str, ApiMode]
) -> None:
    # The API answers only once the page has painted its defaults, so the swap happens on a
    # page the visitor sees: with reserved space nothing may move; without it (the control)
    # the footer moves, which shows that the measurement sees shifts at all.
    _, mode = slow_api
    mode.hold = threading.Event()
    page = watch.page
    page.set_viewport_size({"width": 1000, "height": 2000})
    publish(sites, "acct_layout", {zone_id: FITTING_TEXT for zone_id in xss_zone_ids()})
    query = f"?wm={link_token('acct_layout', campaign=XSS_CAMPAIGN)}&layout={layout}"
    response = page.goto(f"{sites.customer}/{query}")
    assert response is not None and response.status == 200
    page.evaluate(_TWO_FRAMES_JS)
    # While the answer is awaited the snippet hides the zones, and only them: no flash of
    # default copy that would then change, and the rest of the page is there to read.
    assert {zone.visibility for zone in zones_in(page).values()} == {"hidden"}
    assert page.evaluate("() => getComputedStyle(document.querySelector('.footer')).visibility") == "visible"
    mode.hold.set()
    page.wait_for_function("() => document.documentElement.dataset.wmSnippet !== undefined")
    assert page.evaluate("() => document.documentElement.dataset.wmSnippet") == "swapped"
    assert zones_in(page)["z1"].text == FITTING_TEXT
    shift = float(page.evaluate(_LAYOUT_SHIFT_JS))
    assert (shift > 0) if shifts else (shift == 0), f"{layout}: layout shift {shift}"


# -- (c) slow or broken API --------------------------------------------------------------


def test_a_slow_api_leaves_the_default_content(
    watch: PageWatch, sites: Sites, slow_api: tuple[str, ApiMode]
) -> None:
    _, mode = slow_api
    sites.config.budget_ms = 400
    mode.delay_s = 2.5
    publish(sites, "acct_slow", {"z_headline": "Too late to be shown"})
    page = watch.page
    with page.expect_request_finished(lambda r: "/v1/zones" in r.url, timeout=15_000):
        assert visit(page, sites.customer, "acct_slow") == "default"
        assert_defaults_visible(page)
    # The late answer has now reached the page, and changes nothing: the visitor is reading
    # the defaults. (One macrotask later, so the snippet's promise callbacks have run.)
    page.evaluate("() => new Promise((done) => setTimeout(done, 0))")
    assert page.evaluate("() => document.documentElement.dataset.wmSnippet") == "default"
    assert_defaults_visible(page)
    assert mode.answered.is_set()
    assert not watch.dialogs and not watch.page_errors


def test_an_api_answering_503_leaves_the_default_content(
    watch: PageWatch, sites: Sites, slow_api: tuple[str, ApiMode]
) -> None:
    _, mode = slow_api
    mode.status = 503
    sites.config.budget_ms = None  # the snippet's default
    publish(sites, "acct_down", {"z_headline": "Never shown"})
    assert visit(watch.page, sites.customer, "acct_down") == "default"
    assert mode.answered.is_set()
    assert_defaults_visible(watch.page)
    assert not watch.page_errors


@pytest.fixture
def refused_origin() -> Iterator[str]:
    """An origin where connections are refused: a port bound (so no one else takes it), not listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_an_api_refusing_connections_leaves_the_default_content(
    watch: PageWatch, sites: Sites, refused_origin: str
) -> None:
    # Only the script itself is handed to the browser (its real bytes); its calls to its own
    # origin then meet a closed port.
    body = snippet_bytes(sites.renderer)

    def serve_script(route: Route) -> None:
        route.fulfill(body=body, content_type="text/javascript")

    watch.page.route(f"{refused_origin}/snippet.js", serve_script)
    sites.config.api_origin = refused_origin
    sites.config.budget_ms = None  # the snippet's default
    publish(sites, "acct_refused", {"z_headline": "Never shown"})
    assert visit(watch.page, sites.customer, "acct_refused") == "default"
    assert_defaults_visible(watch.page)
    assert any(url.startswith(f"{refused_origin}/v1/zones") for url in watch.requests)
    assert not watch.page_errors


HOSTILE_HREFS = [
    "javascript:alert(document.domain)",
    "data:text/html,<script>alert(1)</script>",
    "http://www.acmerevenue.example/go",
    "https://evil.example/go",
    "https://www.acmerevenue.example.evil.example/go",
    "https://user:pass@www.acmerevenue.example/go",
    "https://www.acmerevenue.example:8443/go",
]


@pytest.mark.parametrize("href", HOSTILE_HREFS)
def test_the_snippet_never_sets_a_link_that_fails_its_own_check(
    href: str, watch: PageWatch, sites: Sites, slow_api: tuple[str, ApiMode]
) -> None:
    # The renderer never answers such a link (its URL gate); the snippet checks again, as
    # invariant 2 says, so a compromised or misconfigured API cannot put one on the page.
    _, mode = slow_api

    def hostile(answer: dict[str, Any]) -> dict[str, Any]:
        answer["zones"]["z_cta"]["href"] = href
        return answer

    mode.rewrite = hostile
    publish(sites, "acct_links", {"z_headline": "Congrats on the Series A", "z_cta": "Click me"})
    assert visit(watch.page, sites.customer, "acct_links") == "swapped"
    found = zones_in(watch.page)
    assert found["z_headline"].text == "Congrats on the Series A"
    # Text and link belong together: the link zone stays exactly as the site wrote it.
    assert (found["z_cta"].href, found["z_cta"].text) == (DEFAULT_HREF, DEFAULTS["z_cta"])
    assert found["z_cta"].visibility == "visible"


# -- (d) CORS ----------------------------------------------------------------------------


def test_an_unlisted_origin_gets_no_cors_grant_and_keeps_its_defaults(watch: PageWatch, sites: Sites) -> None:
    publish(sites, "acct_cors", {"z_headline": "Only for listed origins"})
    sites.config.budget_ms = None  # the snippet's default
    assert visit(watch.page, sites.unlisted, "acct_cors") == "default"
    assert any(url.startswith(f"{sites.renderer}/v1/zones?") for url in watch.requests), "no /v1/zones call"
    # The browser's own verdict on the answer's headers (a CORS failure hands the page nothing).
    watch.settle()
    assert any("No 'Access-Control-Allow-Origin' header" in error for error in watch.console_errors), (
        watch.console_errors
    )
    assert_defaults_visible(watch.page)
    assert "Only for listed origins" not in watch.page.evaluate("() => document.body.innerText")


def test_cors_grants_only_the_listed_origin_without_credentials(sites: Sites) -> None:
    url = f"{sites.renderer}/v1/zones"
    params = {"campaign": XSS_CAMPAIGN}
    listed = httpx.get(url, params=params, headers={"origin": sites.customer})
    assert listed.status_code == 200
    assert listed.headers["access-control-allow-origin"] == sites.customer
    assert "access-control-allow-credentials" not in listed.headers
    assert "origin" in listed.headers["vary"].lower()
    for origin in (sites.unlisted, "https://evil.example", "null"):
        other = httpx.get(url, params=params, headers={"origin": origin})
        assert "access-control-allow-origin" not in other.headers, origin


# -- (e) beacons -------------------------------------------------------------------------


def stream_events(client: redis.Redis, view_id: str) -> list[dict[str, str]]:
    found = []
    entries = all_events(client, TENANT)
    for _, fields in entries:
        event = {k.decode(): v.decode() for k, v in fields.items()}
        if event.get("view_id") == view_id:
            found.append(event)
    return found


def wait_for_event(client: redis.Redis, view_id: str, kind: str) -> dict[str, str]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for event in stream_events(client, view_id):
            if event["type"] == kind:
                return event
        time.sleep(0.05)
    raise AssertionError(f"no {kind} event for view {view_id}: {stream_events(client, view_id)}")


def test_view_and_click_beacons_reach_the_tenant_stream(
    watch: PageWatch, sites: Sites, redis_client: redis.Redis
) -> None:
    version = publish(
        sites, "acct_beacon", {"z_headline": "Congrats on the Series A", "z_cta": "Book a call"}
    )
    page = watch.page
    page.route("https://www.acmerevenue.example/**", lambda route: route.fulfill(body="<p>landed</p>"))
    with page.expect_response(lambda r: "/v1/zones" in r.url) as zones_answer:
        assert visit(page, sites.customer, "acct_beacon") == "swapped"
    answer = zones_answer.value.json()
    assert answer["campaign"] == XSS_CAMPAIGN and answer["zones"]["z_cta"]["href"] == CTA_HREF
    view = wait_for_event(redis_client, answer["view_id"], "view")
    assert view["campaign"] == XSS_CAMPAIGN
    assert view["arm"] == answer["arm"] == "personal"
    assert view["version"] == str(version)

    with page.expect_navigation():
        page.click("[data-wm-zone=z_cta]")
    assert page.url.startswith(CTA_HREF)
    click = wait_for_event(redis_client, answer["view_id"], "click")
    assert click["zone"] == "z_cta" and click["arm"] == "personal"
