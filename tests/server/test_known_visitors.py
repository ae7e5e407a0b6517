"""The returning-visitor cache: the same answer as the full path, and never once any of its
inputs changed (zone set, config, token expiry, valid_until, a Redis fault); only verified
tokens are remembered; bounded."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import pytest
import redis
from starlette.applications import Starlette
from starlette.testclient import TestClient

from server.identify import Identifier, Identity, IdentityMethod
from server.known_visitors import KnownVisitors
from server.visitor import Visitor
from server.zone_cache import ZoneSetCache
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    SECRET,
    TENANT,
    link_token,
    make_zone_set,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from tests.server.pagetools import cta_destination, without_per_request_values, zones
from welcomemat.arms import Arm
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.view import CampaignView
from welcomemat.security.tokens import PageClickTemplates, TokenKind, TokenSigner
from welcomemat.zones.store import ZoneSetStore


def cookie(account: str = PERSONAL_ACCOUNT, **kwargs: Any) -> dict[str, str]:
    return {"cookie": f"wm_{CAMPAIGN}={link_token(account, kind=TokenKind.COOKIE, **kwargs)}"}


def page(client: TestClient, headers: dict[str, str], path: str = f"/c/{CAMPAIGN}") -> str:
    client.cookies.clear()
    response = client.get(path, headers=headers)
    assert response.status_code == 200, response.text
    return without_per_request_values(response.text)


def hero(html: str) -> str:
    return zones(html)["hero_headline"].text


def stats(app: Starlette) -> dict[str, int]:
    return dict(app.state.renderer.metrics.pages.known_visitors)


def loaded(client: TestClient, app: Starlette) -> None:
    """Load the campaign and wait for its watcher: subscribing clears the campaign's cached
    zone sets (a fresh start), which also voids what was remembered before."""
    page(client, {})
    watcher = next(iter(app.state.renderer.watchers.values()))
    assert watcher.subscribed.wait(5)


def make_app(redis_client: redis.Redis, **tuning: Any) -> Starlette:
    now = tuning.pop("clock", time.time)
    options = {"watcher_poll_s": 0.05} | tuning
    return renderer_app(
        renderer_settings(), redis_client=redis_client, clock=now, tuning=tuning_for_tests(**options)
    )


def test_a_returning_visitor_gets_what_the_full_path_gives(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    """Pages (landing, continuation) and /v1/zones, by cookie and by link: with the cache on,
    the same bytes (but for nonce and view id) and the same view token claims as with it off."""
    store.publish(make_zone_set(texts={"hero_headline": "Congrats on the Series A, Dymaxa"}))
    cached, uncached = make_app(redis_client), make_app(redis_client, known_visitor_entries=0)
    signer = TokenSigner([SECRET])
    requests = [
        (f"/c/{CAMPAIGN}", cookie()),
        (f"/c/{CAMPAIGN}/continue", cookie()),
        (f"/c/{CAMPAIGN}?wm={link_token()}", {"dnt": "1"}),  # a link, no cookie set back
        (f"/c/{CAMPAIGN}", cookie("acct_never_published")),
    ]
    with TestClient(cached, base_url=BASE_URL) as on, TestClient(uncached, base_url=BASE_URL) as off:
        loaded(on, cached)
        loaded(off, uncached)
        for path, headers in requests:
            hits = stats(cached)["hit"]
            answers = [page(client, headers, path) for client in (on, off, on, on, off)]
            assert len(set(answers)) == 1, path
            assert stats(cached)["hit"] > hits, path  # the third time at the latest, remembered
        assert len(cached.state.renderer.known_pages) == len(requests)
        assert stats(uncached)["hit"] == 0 and len(uncached.state.renderer.known_pages) == 0

        zones_path = f"/v1/zones?campaign={CAMPAIGN}&wm={link_token()}"
        claims = []
        hits = stats(cached)["hit"]
        for client in (on, off, on, on):
            body = client.get(zones_path).json()
            view = signer.verify_view(body.pop("view"), tenant=TENANT, campaign=CAMPAIGN)
            body.pop("view_id")
            claims.append((body, view.account, view.arm, view.rung, view.zone_set_version))
        assert all(c == claims[0] for c in claims) and claims[0][2] == Arm.PERSONAL
        assert claims[0][4] is not None
        assert stats(cached)["hit"] >= hits + 1  # the link came back: remembered, then hits


def test_a_remembered_answer_works_out_its_click_links_once(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A returning visitor's views only sign their CTA's click token: what it says besides the
    view (its template) comes with the remembered answer, and what every visitor of the page
    shares comes with the page. Every view's link is still its own and leads where the CTA does."""
    store.publish(
        make_zone_set(texts={"cta": "Book your review"}, hrefs={"cta": "https://meet.acmerevenue.example/r"})
    )
    app = make_app(redis_client)
    with TestClient(app, base_url=BASE_URL) as client:
        loaded(client, app)
        signer = app.state.renderer.signer
        per_page: list[dict[str, Any]] = []
        per_visitor: list[tuple[str | None, str | None]] = []
        page_click_templates, for_visitor = signer.page_click_templates, PageClickTemplates.for_visitor

        def counted_page(clicks: Any, **fields: Any) -> Any:
            per_page.append(fields)
            return page_click_templates(clicks, **fields)

        def counted_visitor(self: PageClickTemplates, account: str | None, contact: str | None) -> Any:
            per_visitor.append((account, contact))
            return for_visitor(self, account, contact)

        monkeypatch.setattr(signer, "page_click_templates", counted_page)
        monkeypatch.setattr(PageClickTemplates, "for_visitor", counted_visitor)
        headers = cookie()
        links: list[str | None] = []
        for view in range(5):  # the full path twice (remembered from the second), then from memory
            client.cookies.clear()
            found = zones(client.get(f"/c/{CAMPAIGN}", headers=headers).text)
            links.append(found["cta"].href)
            assert len(per_visitor) == min(view + 1, 2), view
        assert len(per_page) == 1  # the page's own part, once for every visitor
        assert stats(app)["hit"] == 3
        assert len(set(links)) == len(links)  # a click names its view
        assert {cta_destination(client, link) for link in links} == {"https://meet.acmerevenue.example/r"}


def test_a_remembered_visitor_gets_a_newly_published_version(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "Version one"}, input_hash="hash-version-1"))
    app = make_app(redis_client)
    with TestClient(app, base_url=BASE_URL) as client:
        loaded(client, app)
        headers = cookie()
        for _ in range(3):  # remembered from the second, answered from memory on the third
            assert hero(page(client, headers)) == "Version one"
        assert stats(app)["hit"] == 1
        store.publish(make_zone_set(texts={"hero_headline": "Version two"}, input_hash="hash-version-2"))
        deadline = time.monotonic() + 5
        while hero(page(client, headers)) != "Version two":
            assert time.monotonic() < deadline, "the new version was not served within 5 s"
            time.sleep(0.02)


def test_an_expired_cookie_is_not_honoured_from_the_cache(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "PERSONAL"}))
    now = [time.time()]
    app = make_app(redis_client, clock=lambda: now[0])
    with TestClient(app, base_url=BASE_URL) as client:
        loaded(client, app)
        headers = cookie(ttl_s=600)
        for _ in range(3):
            assert hero(page(client, headers)) == "PERSONAL"
        assert stats(app)["hit"] == 1
        now[0] += 601  # the cookie has expired; nothing else changed
        html = page(client, headers)
        assert "PERSONAL" not in html
        assert {z.rung for z in zones(html).values()} == {"default"}  # anonymous


def test_valid_until_is_honoured_from_the_cache(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    valid_until = datetime.now(UTC) + timedelta(hours=1)
    store.publish(make_zone_set(texts={"hero_headline": "FRESH CLAIM"}, valid_until=valid_until))
    now = [time.time()]
    app = make_app(redis_client, clock=lambda: now[0])
    with TestClient(app, base_url=BASE_URL) as client:
        loaded(client, app)
        headers = cookie(ttl_s=30 * 86400)
        for _ in range(3):
            assert hero(page(client, headers)) == "FRESH CLAIM"
            body = client.get(f"/v1/zones?campaign={CAMPAIGN}", headers=headers).json()
            assert body["zones"]["hero_headline"]["text"] == "FRESH CLAIM"
        assert stats(app)["hit"] == 3  # the page from its third view, the zones from their second
        now[0] = valid_until.timestamp() + 1  # past valid_until, nothing republished
        html = page(client, headers)
        assert "FRESH CLAIM" not in html and zones(html)["hero_headline"].rung == "segment"
        body = client.get(f"/v1/zones?campaign={CAMPAIGN}", headers=headers).json()
        assert body["zones"]["hero_headline"]["rung"] == "segment"


def test_refused_tokens_are_never_remembered(redis_client: redis.Redis, published: Campaign) -> None:
    app = make_app(redis_client)
    good = link_token(kind=TokenKind.COOKIE)
    refused = [
        "not-a-token",
        good[:-2] + ("AA" if not good.endswith("AA") else "BB"),  # tampered
        link_token(kind=TokenKind.COOKIE, tenant="globex"),  # another tenant
        TokenSigner(["another-secret-nobody-configured-0123456789"]).sign(
            TokenKind.COOKIE, tenant=TENANT, campaign=CAMPAIGN, account=PERSONAL_ACCOUNT, ttl_s=600
        ),
    ]
    with TestClient(app, base_url=BASE_URL) as client:
        for token in refused:
            for _ in range(2):
                html = page(client, {"cookie": f"wm_{CAMPAIGN}={token}"})
                assert {z.rung for z in zones(html).values()} == {"default"}
                # a refused link next to a good cookie: not remembered either
                page(client, {"cookie": f"wm_{CAMPAIGN}={good}"}, f"/c/{CAMPAIGN}?wm={token}")
        assert len(app.state.renderer.known_pages) == 0
        assert stats(app)["hit"] == 0


def test_a_redis_fault_fallback_is_not_remembered(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    """Redis unreachable when the zone set is first read: the default copy, not remembered;
    the next request after Redis answers again gets the personal copy."""
    store.publish(make_zone_set(texts={"hero_headline": "PERSONAL"}))
    app = make_app(redis_client, breaker_failures=100)
    renderer = app.state.renderer
    with TestClient(app, base_url=BASE_URL) as client:
        loaded(client, app)
        original = renderer.zone_set_reader._store.get
        renderer.zone_set_reader._store.get = lambda *a: (_ for _ in ()).throw(redis.ConnectionError("down"))
        headers = cookie()
        try:
            for _ in range(2):  # the second time the cookie comes back: it would be remembered
                assert zones(page(client, headers))["hero_headline"].rung == "default"
            assert len(renderer.known_pages) == 0
        finally:
            renderer.zone_set_reader._store.get = original
        assert hero(page(client, headers)) == "PERSONAL"
        assert len(renderer.known_pages) == 1


# -- the cache itself ------------------------------------------------------------------------


def _view(tenant: str = TENANT) -> CampaignView:
    return cast(CampaignView, SimpleNamespace(tenant=tenant))


def _parts(
    cache_size: int = 10,
) -> tuple[KnownVisitors[str], Identifier, ZoneSetCache, list[float]]:
    now = [time.time()]
    identifier = Identifier(TokenSigner([SECRET]), clock=lambda: now[0])
    zone_cache = ZoneSetCache(100, ttl_s=30)
    known: KnownVisitors[str] = KnownVisitors(
        identifier, zone_cache, max_entries=cache_size, clock=lambda: now[0]
    )
    return known, identifier, zone_cache, now


def _seen_twice(identifier: Identifier, token: str) -> Any:
    """The claims of a cookie token verified by one request and brought again by the next."""
    for _ in range(2):
        claims = identifier.verify(TokenKind.COOKIE, token, tenant=TENANT, campaign=CAMPAIGN)
        assert claims is not None
    return claims


def _remembered(
    known: KnownVisitors[str], identifier: Identifier, zone_cache: ZoneSetCache, account: str
) -> Any:
    """A cookie visit for `account`, verified (and seen again) and with its zone set cached,
    remembered."""
    token = link_token(account, kind=TokenKind.COOKIE)
    claims = _seen_twice(identifier, token)
    zone_set = make_zone_set(account)
    ticket = zone_cache.begin_fetch((TENANT, CAMPAIGN, account))
    zone_cache.put((TENANT, CAMPAIGN, account), zone_set, ticket)
    visitor = Visitor(Identity(IdentityMethod.COOKIE, account), claims, Arm.PERSONAL, zone_set)
    key = (CAMPAIGN, "landing", None, token)
    view = _view()
    known.remember(key, view, zone_cache.changes, visitor, f"page of {account}")
    return key, view, zone_set


def test_an_entry_stands_only_while_its_view_and_the_zone_sets_are_unchanged() -> None:
    known, identifier, zone_cache, _ = _parts()
    key, view, _ = _remembered(known, identifier, zone_cache, "acct_a")
    hit = known.get(key, view)
    assert hit is not None and hit.result == "page of acct_a"
    assert known.get(key, _view()) is None  # the config was reloaded: a new view object
    key, view, _ = _remembered(known, identifier, zone_cache, "acct_a")
    zone_cache.invalidate((TENANT, CAMPAIGN, "acct_other"), 2)  # any change message
    assert known.get(key, view) is None
    key, view, _ = _remembered(known, identifier, zone_cache, "acct_a")
    zone_cache.clear_campaign(TENANT, CAMPAIGN)  # a reconnect
    assert known.get(key, view) is None


def test_an_entry_ends_with_the_memos_it_was_built_from() -> None:
    known, identifier, zone_cache, _ = _parts()
    key, view, _ = _remembered(known, identifier, zone_cache, "acct_a")
    entry = known.get(key, view)
    assert entry is not None
    trust = identifier.trust(TokenKind.COOKIE, cast(str, key[3]), tenant=TENANT, campaign=CAMPAIGN)
    cached_until = zone_cache.cached_until((TENANT, CAMPAIGN, "acct_a"), known_zone_set(zone_cache, "acct_a"))
    assert trust is not None and cached_until is not None
    assert entry.until_monotonic == min(trust[0], cached_until)
    assert entry.until_clock <= trust[1]


def known_zone_set(zone_cache: ZoneSetCache, account: str) -> Any:
    hit, zone_set = zone_cache.get((TENANT, CAMPAIGN, account))
    assert hit
    return zone_set


def test_what_the_zone_set_cache_does_not_hold_is_not_remembered() -> None:
    """A fault's fallback (no cache entry), or a zone set the cache has since replaced."""
    known, identifier, zone_cache, _ = _parts()
    token = link_token("acct_b", kind=TokenKind.COOKIE)
    claims = _seen_twice(identifier, token)
    served = make_zone_set("acct_b")
    visitor = Visitor(Identity(IdentityMethod.COOKIE, "acct_b"), claims, Arm.PERSONAL, None)
    known.remember((CAMPAIGN, "landing", None, token), _view(), 0, visitor, "fallback")
    ticket = zone_cache.begin_fetch((TENANT, CAMPAIGN, "acct_b"))
    zone_cache.put((TENANT, CAMPAIGN, "acct_b"), make_zone_set("acct_b"), ticket)
    visitor = Visitor(Identity(IdentityMethod.COOKIE, "acct_b"), claims, Arm.PERSONAL, served)
    known.remember((CAMPAIGN, "landing", None, token), _view(), 0, visitor, "older")
    assert len(known) == 0


def test_a_token_is_remembered_from_the_second_request_that_brings_it() -> None:
    """The doorkeeper: a send's one-time clicks do not fill the cache (nor push out the
    visitors who do come back); the second request remembers, the third is answered."""
    known, identifier, zone_cache, _ = _parts()
    token = link_token("acct_c", kind=TokenKind.COOKIE)
    zone_set = make_zone_set("acct_c")
    ticket = zone_cache.begin_fetch((TENANT, CAMPAIGN, "acct_c"))
    zone_cache.put((TENANT, CAMPAIGN, "acct_c"), zone_set, ticket)
    key, view = (CAMPAIGN, "landing", None, token), _view()
    remembered = []
    for _ in range(2):
        claims = identifier.verify(TokenKind.COOKIE, token, tenant=TENANT, campaign=CAMPAIGN)
        visitor = Visitor(Identity(IdentityMethod.COOKIE, "acct_c"), claims, Arm.PERSONAL, zone_set)
        remembered.append(known.remember(key, view, zone_cache.changes, visitor, "page of acct_c"))
    assert remembered[0] is None and remembered[1] is not None
    hit = known.get(key, view)
    assert hit is not None and hit.result == "page of acct_c"


@pytest.mark.parametrize("method", [IdentityMethod.IP, IdentityMethod.ANONYMOUS])
def test_visitors_not_identified_by_a_token_are_not_remembered(method: IdentityMethod) -> None:
    known, _, _, _ = _parts()
    account = "acct_ip" if method is IdentityMethod.IP else None
    visitor = Visitor(Identity(method, account), None, Arm.PERSONAL, None)
    known.remember((CAMPAIGN, "landing", None, None), _view(), 0, visitor, "page")
    assert len(known) == 0


def test_the_cache_is_bounded_oldest_first() -> None:
    known, identifier, zone_cache, _ = _parts(cache_size=3)
    keys = [_remembered(known, identifier, zone_cache, f"acct_{n}")[:2] for n in range(5)]
    assert len(known) == 3
    assert [known.get(key, view) is not None for key, view in keys] == [False, False, True, True, True]


def test_entries_whose_time_is_up_make_way_for_new_ones() -> None:
    """Memory follows the visitors of the last minute: entries past their TTLs are dropped
    as new ones are remembered, even far below the size bound."""
    mono = [time.monotonic()]
    now = [time.time()]
    identifier = Identifier(TokenSigner([SECRET]), clock=lambda: now[0])
    zone_cache = ZoneSetCache(100, ttl_s=30, clock=lambda: mono[0])
    known: KnownVisitors[str] = KnownVisitors(
        identifier, zone_cache, max_entries=1000, clock=lambda: now[0], monotonic=lambda: mono[0]
    )
    for n in range(10):
        _remembered(known, identifier, zone_cache, f"acct_old{n}")
    assert len(known) == 10
    mono[0] += 31  # past the zone-set cache TTL of every entry so far
    for n in range(5):
        _remembered(known, identifier, zone_cache, f"acct_new{n}")
    assert len(known) == 5  # two old ones dropped per new one
    key, view, _ = _remembered(known, identifier, zone_cache, "acct_new0")
    assert known.get(key, view) is not None


def test_a_size_of_zero_turns_it_off() -> None:
    known, identifier, zone_cache, _ = _parts(cache_size=0)
    _remembered(known, identifier, zone_cache, "acct_a")
    assert len(known) == 0
